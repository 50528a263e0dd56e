"""The rules of a tool call's commit, written once for every store.

:func:`plan_commit` turns what a run held, its call record and its :class:`SessionChanges` into a
:class:`CommitPlan`: typed writes (the call's record and marker, the metadata update, the tool's
own items) and the conditions they are written under. The budgets are applied while planning,
so a change that can never fit is refused before anything is sent. A store then either applies
the whole plan or none of it:

* the DynamoDB store (``adapters.dynamodb.sessions``) renders it as one TransactWriteItems, each
  condition as a condition expression, and explains a cancelled transaction with
  :meth:`CommitPlan.refusal`, reading DynamoDB's verdict on each action;
* the in-memory store of ``mcp_platform.testing`` applies it under a lock, judging each condition
  with the same :meth:`CommitPlan.refusal` on what it holds.

What is decided here, for both:

* "alive" (active, ttl ahead of the commit's time) is always a condition: an append-only commit
  never conflicts, but never lands on an ended or expired session either;
* append-only: nothing more, so parallel appends all commit;
* read-modify-write under the session's version (D2) or under the versions of the attributes the
  run read, losing the race as VersionConflict with the state that won;
* a session item written before attribute versions were kept commits once under its version;
* the tool's extra puts (``if_absent``, ``expect``) and condition checks, failing as
  PreconditionFailed naming their label;
* a call id committed already: DuplicateToolCall with the original result for the same request,
  IdempotencyKeyReused for another one; it decides before anything else. A call under a fresh id
  (``ToolCall.replayable`` False: no retry can carry it) has no marker, and its record holds its
  result: one item fewer, and nothing a replay could look for;
* the budgets: the call record (arguments and result), the context (what this call appends, and
  the stored context with it, checked atomically) and the attributes -> CallRecordTooLarge and
  SessionCapacityExceeded;
* the session after the commit, as the store's update computes it (:meth:`MetadataWrite.apply`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from mcp_platform.application.sessions.changes import ConditionCheck, ExtraPut, SessionChanges
from mcp_platform.application.sessions.errors import (
    CallRecordTooLarge,
    DuplicateToolCall,
    IdempotencyKeyReused,
    PreconditionFailed,
    SessionCapacityExceeded,
    SessionNotFound,
    SessionStoreError,
    VersionConflict,
    require_alive,
)
from mcp_platform.application.sessions.model import (
    CommitResult,
    Session,
    ToolCall,
    ToolCallRecord,
    ToolCallResult,
    context_item_sk,
    tool_call_marker_sk,
    tool_record_sk,
)
from mcp_platform.application.stored_form import check_storable
from mcp_platform.protocol.clock import iso_utc
from mcp_platform.protocol.tools import READ_MODIFY_WRITE, READ_ONLY

# One tool call is stored as two items, the record (its arguments) and the marker (its result,
# which replay reads), or as one record holding both: either way they get this budget, so each
# stays far below DynamoDB's 400 KB item limit and a commit (both + the metadata item) far below
# the 4 MB transaction limit. The endpoint refuses larger arguments before the tool runs
# (``protocol.preparation``) and a larger result before the commit; the plan checks it again.
CALL_RECORD_BUDGET_BYTES = 128 * 1024

# The context lives in context items of its own (one per write that appends, D1/D3 as amended:
# a commit writes what it appends, not the context before it). Its stored size is still capped
# (tracked in the metadata's ``context_bytes``, checked atomically by the write that grows it):
# a tool that reads the context reads all of it (one Query, at most 40 read units at 160 KiB),
# and a session from before the context items still holds its list in the metadata item, which
# must stay far from DynamoDB's 400 KB limit (and moto's, which counts an updated item twice).
DEFAULT_CONTEXT_BUDGET_BYTES = 160 * 1024
ATTRIBUTES_BUDGET_BYTES = 64 * 1024

# The order of a commit's parts: the record, the marker (when the call has one), the metadata
# (CommitPlan.metadata_index), then the tool's extra puts and its condition checks. A failed
# precondition is named by its position (the DynamoDB store renders the parts in this order, one
# transaction action each).
RECORD, MARKER = 0, 1
CONDITION_FAILED = "ConditionalCheckFailed"


@dataclass(frozen=True)
class Budgets:
    """What one session and one call may take, in bytes as DynamoDB sizes them
    (:mod:`mcp_platform.application.stored_form`)."""

    context_bytes: int = DEFAULT_CONTEXT_BUDGET_BYTES
    attributes_bytes: int = ATTRIBUTES_BUDGET_BYTES
    record_bytes: int = CALL_RECORD_BUDGET_BYTES


@dataclass(frozen=True)
class RecordWrite:
    """A call's immutable items (D1, D4), each written only if absent: its record (the
    arguments, what ``list_tool_calls`` reads back) and, for a call a retry can repeat, its
    marker (the result, what a replay answers with); without a marker the record holds the
    result."""

    session_id: str
    call: ToolCall
    record: ToolCallRecord
    marker: ToolCallResult
    """The committed result, as a replay answers with it (stored in the marker when there is one)."""

    @property
    def has_marker(self) -> bool:
        return bool(self.record.result_sk)

    @property
    def items(self) -> int:
        """How many items the call writes: the record, and its marker when it has one."""
        return 2 if self.has_marker else 1


def plan_record(session_id: str, call: ToolCall, *, now: float, budget: int) -> RecordWrite:
    """The record and marker of ``call`` at ``now`` (its start when it has none): refused with
    CallRecordTooLarge when its arguments and result together exceed ``budget``."""
    if not call.id:
        raise ValueError("tool call id is required")
    started = iso_utc(call.started_at if call.started_at is not None else now)
    result_bytes = check_storable(call.result, "result")
    stored = check_storable(call.arguments, "arguments") + result_bytes
    if stored > budget:
        raise CallRecordTooLarge(call.id, budget, stored)
    record_sk = tool_record_sk(started, call.id)
    marker_sk = tool_call_marker_sk(call.id) if call.replayable else ""
    record = ToolCallRecord(
        tool_call_id=call.id,
        tool_name=call.name,
        arguments=call.arguments,
        is_error=call.is_error,
        started_at=started,
        finished_at=iso_utc(call.finished_at if call.finished_at is not None else now),
        sk=record_sk,
        result_sk=marker_sk,
        result_bytes=result_bytes,
    )
    marker = ToolCallResult(call.id, call.name, call.result, call.is_error, record_sk, iso_utc(now), call.request_hash)
    return RecordWrite(session_id, call, record, marker)


def context_growth(session_id: str, entries: Sequence[Any], budget: int) -> tuple[int, int]:
    """The stored size of ``entries`` appended to a context, and the room the stored context may
    take at most for them to fit in ``budget`` (D3: checked atomically by the write). Entries
    larger than the whole budget are SessionCapacityExceeded at once."""
    size = check_storable(list(entries), "context")
    if size > budget:
        raise SessionCapacityExceeded(session_id, "context", budget, size)
    return size, budget - size


def admit_attributes(session_id: str, attributes: Mapping[str, Any], budget: int) -> int:
    """The stored size of an attribute map, SessionCapacityExceeded past ``budget``."""
    size = check_storable(dict(attributes), "attributes")
    if size > budget:
        raise SessionCapacityExceeded(session_id, "attributes", budget, size)
    return size


@dataclass(frozen=True)
class MetadataWrite:
    """The update of the session's metadata item and the condition it is written under.

    Condition: "alive" at ``now``; the version ``expected_version`` (D2, when not None); each
    attribute version of ``seen``; and, when it appends, a stored context of at most
    ``context_room`` bytes. Update: version and call count plus one, ttl slid (D7), the context
    appended (D3: ``context_append`` written as the context item ``context_sk``, counted in the
    metadata's context size and item count), and either the whole attribute map with its
    versions or each changed attribute with its next version (the arithmetic:
    ``adapters.dynamodb.sessions.store``)."""

    session_id: str
    held_version: int
    now: int
    ttl: int
    updated_at: str
    expected_version: int | None = None
    seen: Mapping[str, int] = field(default_factory=dict)
    context_append: tuple[Any, ...] = ()
    context_sk: str = ""
    """The sort key of the context item that holds ``context_append`` (``ctx#<time>#<call id>``)."""
    context_bytes: int = 0
    context_room: int | None = None
    context_budget: int = DEFAULT_CONTEXT_BUDGET_BYTES
    attributes: Mapping[str, Any] | None = None
    attribute_versions: Mapping[str, int] | None = None
    attribute_changes: Mapping[str, Any] = field(default_factory=dict)
    next_versions: Mapping[str, int] = field(default_factory=dict)

    def failure(self, current: Session | None) -> SessionStoreError | None:
        """Why the condition does not hold of ``current`` (the stored session; None: there is
        none), or None when it holds. A session gone or not alive first, then the version,
        then the attributes read, then the context budget."""
        if current is None:
            return SessionNotFound(self.session_id)
        try:
            require_alive(current, self.now)
        except SessionNotFound as gone:
            return gone
        if self.expected_version is not None and current.version != self.expected_version:
            return VersionConflict(self.session_id, self.held_version, current)
        changed = current.changed_attributes(self.seen)
        if changed:
            return VersionConflict(self.session_id, self.held_version, current, attributes=changed)
        if self.context_room is not None and (current.context_bytes or 0) > self.context_room:
            return SessionCapacityExceeded(self.session_id, "context", self.context_budget)
        return None

    def apply(self, current: Session) -> Session:
        """``current`` once this update is applied to it, as the store's update computes it."""
        attributes, versions = current.attributes, current.attribute_versions
        if self.attributes is not None:
            attributes, versions = dict(self.attributes), dict(self.attribute_versions or {})
        elif self.attribute_changes:
            attributes = {**current.attributes, **self.attribute_changes}
            versions = {**(current.attribute_versions or {}), **self.next_versions}
        context, context_bytes = current.context, current.context_bytes
        if self.context_append:
            context = [*current.context, *self.context_append]
            context_bytes = (current.context_bytes or 0) + self.context_bytes
        return replace(
            current,
            version=current.version + 1,
            ttl=self.ttl,
            context=context,
            context_bytes=context_bytes,
            attributes=attributes,
            attribute_versions=versions,
            updated_at=self.updated_at,
            tool_calls=current.tool_calls + 1,
        )


class Found(Protocol):
    """What a store found where a plan writes, as :meth:`CommitPlan.refusal` asks for it: the
    in-memory store reads what it holds; the DynamoDB store reads a cancelled transaction's
    verdicts (and the items they returned)."""

    def committed(self) -> ToolCallResult | None:
        """The result committed under the call's id already (D4), or None."""
        ...

    def metadata_failure(self, metadata: MetadataWrite) -> SessionStoreError | None:
        """Why the metadata update's condition fails (``metadata.failure`` of the stored
        session), or None when it holds."""
        ...

    def refused(self, index: int, intent: ExtraPut | ConditionCheck) -> bool:
        """Whether the tool's extra put or condition check at ``index`` fails."""
        ...


@dataclass(frozen=True)
class CommitPlan:
    """One tool call's commit: written all together or not at all (D10)."""

    session: Session
    """The session as the run held it."""
    record: RecordWrite
    metadata: MetadataWrite
    extra_puts: tuple[ExtraPut, ...] = ()
    condition_checks: tuple[ConditionCheck, ...] = ()

    @property
    def exact(self) -> bool:
        """Whether :meth:`outcome` is exactly what is stored (committed under the version)."""
        return self.metadata.expected_version is not None

    @property
    def metadata_index(self) -> int:
        """The metadata Update's position: after the call's record and marker (when it has one)."""
        return self.record.items

    def preconditions(self) -> list[tuple[int, str, ExtraPut | ConditionCheck]]:
        """The tool's own writes and checks, with their position and label, in order."""
        intents: list[ExtraPut | ConditionCheck] = [*self.extra_puts, *self.condition_checks]
        first = self.metadata_index + 1
        return [(first + i, self._label(first + i), intent) for i, intent in enumerate(intents)]

    def precondition_failed(self, index: int, code: str = CONDITION_FAILED, message: str = "") -> PreconditionFailed:
        return PreconditionFailed(index, self._label(index), code, message)

    def duplicate(self, original: ToolCallResult) -> SessionStoreError:
        """The call's id is committed already: the original result for the same request only."""
        if not original.answers(self.record.call.request_hash):
            return IdempotencyKeyReused(self.record.call.id)
        return DuplicateToolCall(original)

    def refusal(self, found: Found) -> SessionStoreError | None:
        """Why this plan cannot be committed on what ``found`` says is stored, or None: the
        call id taken decides first (whatever else fails), then the metadata's condition,
        then the tool's preconditions in order."""
        original = found.committed()
        if original is not None:
            return self.duplicate(original)
        failure = found.metadata_failure(self.metadata)
        if failure is not None:
            return failure
        for index, _, intent in self.preconditions():
            if found.refused(index, intent):
                return self.precondition_failed(index)
        return None

    def outcome(self) -> CommitResult:
        """The session after the commit, computed without a read: exact under the version
        condition; otherwise commits made in between are not in it (version and context are
        lower bounds then, and each attribute's value is exact together with its version)."""
        return CommitResult(session=self.metadata.apply(self.session), result=self.record.marker, exact=self.exact)

    def _label(self, index: int) -> str:
        position = index - self.metadata_index - 1
        if position < len(self.extra_puts):
            return self.extra_puts[position].label or f"extra_puts[{position}]"
        position -= len(self.extra_puts)
        return self.condition_checks[position].label or f"condition_checks[{position}]"


def plan_commit(
    session: Session, call: ToolCall, changes: SessionChanges, *, now: float, ttl: int, budgets: Budgets
) -> CommitPlan:
    """The plan that commits ``call`` and its ``changes`` to ``session`` (as the run held it) at
    ``now``, sliding the session's expiry to ``ttl`` (D7). Refuses at once what can never be
    committed: a read-only call (it commits nothing), a session the held state shows ended or
    expired, and whatever exceeds a budget."""
    if changes.effect == READ_ONLY:
        raise ValueError("a read_only call changes nothing in its session: there is no commit")
    require_alive(session, now)  # known from the held state: refused before any write
    record = plan_record(session.id, call, now=now, budget=budgets.record_bytes)
    metadata: dict[str, Any] = {}
    if changes.context_append:
        size, room = context_growth(session.id, changes.context_append, budgets.context_bytes)
        metadata.update(
            context_append=tuple(changes.context_append),
            context_sk=context_item_sk(record.marker.committed_at, call.id),
            context_bytes=size,
            context_room=room,
        )
    whole, by_attribute = changes.attributes, changes.by_attribute
    if by_attribute is not None and session.attribute_versions is None:
        # An item written before attribute versions were kept: this one commit is conditioned
        # on the session's version, and writes the map (every later one can use it).
        whole = {**session.attributes, **by_attribute.values} if by_attribute.values else None
        by_attribute = None
    if changes.effect == READ_MODIFY_WRITE and by_attribute is None:
        metadata["expected_version"] = session.version
    if whole is not None:
        admit_attributes(session.id, whole, budgets.attributes_bytes)
        metadata.update(attributes=dict(whole), attribute_versions=session.versions_after(whole))
    elif by_attribute is not None:
        written = by_attribute.changes(session.attributes)
        # The whole map as this run knows it: exact for what it read; attributes written
        # meanwhile by other runs are counted as loaded (DynamoDB's item limit bounds the rest).
        admit_attributes(session.id, {**session.attributes, **written}, budgets.attributes_bytes)
        metadata.update(
            seen=dict(by_attribute.seen),
            attribute_changes=written,
            next_versions={name: by_attribute.seen[name] + 1 for name in written},
        )
    return CommitPlan(
        session=session,
        record=record,
        metadata=MetadataWrite(
            session_id=session.id,
            held_version=session.version,
            now=math.floor(now),
            ttl=ttl,
            updated_at=record.marker.committed_at,
            context_budget=budgets.context_bytes,
            **metadata,
        ),
        extra_puts=tuple(changes.extra_puts),
        condition_checks=tuple(changes.condition_checks),
    )
