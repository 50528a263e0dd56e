"""Tool-call commits: the idempotent read, record (D4), commit (D10) and listing."""

from __future__ import annotations

from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import AttributeValue, item_size, to_attr, to_item
from mcp_platform.adapters.dynamodb.sessions.actions import CommitActions, reject_repeated_keys
from mcp_platform.adapters.dynamodb.sessions.items import (
    marker_from_item,
    marker_key,
    meta_key,
    record_from_item,
    session_from_item,
)
from mcp_platform.adapters.dynamodb.sessions.table import SessionTable
from mcp_platform.adapters.dynamodb.sessions.transaction import (
    ConditionFailed,
    TokenMismatch,
    check_limits,
    client_request_token,
    transact_write,
)
from mcp_platform.application.sessions.changes import ConditionCheck, ExtraPut, SessionChanges
from mcp_platform.application.sessions.commit_plan import (
    MARKER,
    RECORD,
    CommitPlan,
    MetadataWrite,
    plan_commit,
    plan_record,
)
from mcp_platform.application.sessions.cursors import decode_cursor, encode_cursor
from mcp_platform.application.sessions.errors import (
    IdempotencyKeyReused,
    IdempotencyTokenReused,
    SessionStoreError,
    StoreThrottled,
    TransactionFailed,
)
from mcp_platform.application.sessions.model import CommitResult, Session, ToolCall, ToolCallPage, ToolCallResult


class ToolCallCommits:
    """A session's tool calls: loaded with the session, recorded, committed with their effects,
    listed."""

    def __init__(self, table: SessionTable) -> None:
        self.table = table
        self.actions = CommitActions(table)

    def load_for_tool_call(
        self,
        session_id: str,
        tool_call_id: str | None,
        *,
        owner: str | None,
        request_hash: str | None = None,
        consistent: bool = True,
        with_context: bool = True,
    ) -> tuple[Session, ToolCallResult | None]:
        """ONE BatchGetItem, ConsistentRead (X4: version and expiry decisions follow): the
        metadata item and the tool call's idempotency marker (none for ``tool_call_id`` None: a
        fresh id, which nothing can be committed under yet). A marker means "replay: answer
        with the stored result", for the same request only: given ``request_hash``, a marker of
        another request raises IdempotencyKeyReused. UnprocessedKeys (throttling only) are
        fetched again. ``consistent=False`` (X6, a read-only tool that declared it may read a
        cached session): served by the DAX item cache; a cached missing or expired session is
        confirmed by the consistent read before it is an answer. ``with_context``: the session's
        context too, one Query of its context items when it has some (an append-only call does
        without: what it appends never depends on the context before it)."""
        keys = [meta_key(session_id)]
        if tool_call_id is not None:
            keys.append(marker_key(session_id, tool_call_id))
        found: dict[str, dict[str, AttributeValue]] = {}
        request: dict[str, Any] = {self.table.table_name: {"Keys": keys, "ConsistentRead": consistent}}
        for _ in self.table.backoff.attempts():
            response = self.table.gateway.call("batch_get_item", RequestItems=request)
            for item in response.get("Responses", {}).get(self.table.table_name, []):
                found[item[ts.SK]["S"]] = item
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
        if request:
            raise StoreThrottled("batch_get_item left keys unprocessed on every attempt")
        if not consistent and not self.table.cached_alive(found.get(ts.METADATA_SK)):
            return self.load_for_tool_call(
                session_id, tool_call_id, owner=owner, request_hash=request_hash, with_context=with_context
            )
        metadata = found.get(ts.METADATA_SK)
        session = self.table.visible(session_id, metadata, owner)
        marker = found.get(ts.tool_call_marker_sk(tool_call_id)) if tool_call_id is not None else None
        if marker is None:
            if with_context and metadata is not None:
                session = self.table.with_context(session, metadata, consistent=consistent)
            return session, None
        prior = marker_from_item(marker)
        if request_hash is not None and not prior.answers(request_hash):
            raise IdempotencyKeyReused(prior.tool_call_id)
        return session, prior  # a replay: the tool does not run, its context is not read

    def record_tool_call(self, session_id: str, call: ToolCall, *, owner: str | None = None) -> ToolCallResult:
        """D4: write the record and its marker with ``attribute_not_exists`` (plus a
        ConditionCheck that the session is alive). A replayed id is a silent success that
        returns the original result (for the same request; another one: IdempotencyKeyReused)."""
        write = plan_record(session_id, call, now=self.table.clock.now(), budget=self.table.record_budget_bytes)
        actions = self.actions.record_puts(write)
        condition, names, values = self.table.alive(owner)
        actions.append(self.actions.check_item(meta_key(session_id), condition, names, values))
        try:
            transact_write(
                self.table.gateway, actions, client_request_token(call.id, actions), self.table.conflict_backoff
            )
        except ConditionFailed as cancel:
            failed = {r.index: r for r in cancel.failed()}
            original = self._original(session_id, call.id, failed) if write.has_marker else None
            if original is not None:
                return _same_request(original, call)
            alive_check = write.items  # after the record and its marker
            if alive_check in failed:
                item = failed[alive_check].item or self.table.read_item(session_id, consistent=True)
                self.table.raise_not_alive(session_id, item, owner)
            raise TransactionFailed(cancel.reasons) from cancel
        except TokenMismatch as exc:
            return _same_request(self._replayed(session_id, call.id, exc), call)
        return write.marker

    def commit(self, session: Session, call: ToolCall, changes: SessionChanges) -> CommitResult:
        """D10: the commit plan (``application.sessions.commit_plan``: what is written, under
        which conditions, within which budgets) as one TransactWriteItems: [0] Put record, [1]
        Put marker (both ``attribute_not_exists``; no marker for a call under a fresh id, whose
        record holds its result), [2] Update metadata (version+1, sliding ttl
        D7, the context's size and item count D3 within its byte budget, attributes), then the
        tool's extra puts and condition checks, then [last] Put the context item of what the call
        appends (D1/D3 as amended: the context before it is not rewritten). ``session`` is the
        state the run held: no read is made.

        A cancelled transaction is explained by the plan's rules from DynamoDB's verdict on each
        action: a lost race is VersionConflict carrying the current state, an id committed
        already DuplicateToolCall (same request) or IdempotencyKeyReused, a tool's own condition
        PreconditionFailed. ClientRequestToken: derived from the call id and the transaction's
        content, so a rebuilt (changed) transaction never reuses a token."""
        now = self.table.clock.now()
        plan = plan_commit(
            session, call, changes, now=now, ttl=self.table.next_ttl(now=now), budgets=self.table.budgets
        )
        actions = self.actions.commit(plan)
        reject_repeated_keys(actions)
        check_limits(actions, extra_bytes=_held_bytes(session))
        try:
            transact_write(
                self.table.gateway, actions, client_request_token(call.id, actions), self.table.conflict_backoff
            )
        except ConditionFailed as cancel:
            refusal = plan.refusal(_Verdicts(self, plan, cancel))
            raise (refusal if refusal is not None else TransactionFailed(cancel.reasons)) from cancel
        except TokenMismatch as exc:
            raise plan.duplicate(self._replayed(session.id, call.id, exc)) from exc
        return plan.outcome()

    def list_tool_calls(
        self,
        session_id: str,
        *,
        owner: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        consistent: bool,
    ) -> ToolCallPage:
        """A page of the session's tool-call records in time order (Query on ``tool#``).
        The session is checked first (get_session with the same ``consistent`` flag)."""
        if not 1 <= limit <= 1000:
            raise ValueError(f"limit must be 1..1000, got {limit}")
        start = decode_cursor(cursor) if cursor else None  # refused before any AWS call
        self.table.get_session(session_id, owner=owner, consistent=consistent)
        pk = to_attr(ts.session_pk(session_id))
        params: dict[str, Any] = {
            "TableName": self.table.table_name,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": ts.PK, "#sk": ts.SK},
            "ExpressionAttributeValues": {":pk": pk, ":prefix": to_attr(ts.TOOL_RECORD_PREFIX)},
            "Limit": limit,
            "ConsistentRead": consistent,
        }
        if start is not None:
            params["ExclusiveStartKey"] = {ts.PK: pk, ts.SK: to_attr(start)}
        response = self.table.gateway.call("query", **params)
        records = [record_from_item(item) for item in response.get("Items", [])]
        last = response.get("LastEvaluatedKey")
        return ToolCallPage(records=records, next_cursor=encode_cursor(last[ts.SK]["S"]) if last else None)

    # -- interpreting failures -------------------------------------------------------------------
    def _original(self, session_id: str, call_id: str, failed: dict[int, Any]) -> ToolCallResult | None:
        """The committed result when the marker (or record) condition failed, else None."""
        if MARKER in failed and failed[MARKER].item:
            return marker_from_item(failed[MARKER].item)
        if MARKER in failed or RECORD in failed:
            return self._read_marker(session_id, call_id)
        return None

    def _replayed(self, session_id: str, call_id: str, exc: Exception) -> ToolCallResult:
        original = self._read_marker(session_id, call_id)
        if original is None:
            raise IdempotencyTokenReused(call_id) from exc
        return original

    def _read_marker(self, session_id: str, call_id: str) -> ToolCallResult | None:
        response = self.table.gateway.call(  # X4: deciding "already committed?" needs the latest value
            "get_item", TableName=self.table.table_name, Key=marker_key(session_id, call_id), ConsistentRead=True
        )
        item = response.get("Item")
        return marker_from_item(item) if item else None


class _Verdicts:
    """A cancelled commit as the plan's rules read it (``commit_plan.Found``): which actions
    DynamoDB found failing, and the items their conditions failed on."""

    def __init__(self, commits: ToolCallCommits, plan: CommitPlan, cancel: ConditionFailed) -> None:
        self.commits, self.plan = commits, plan
        self.failed = {reason.index: reason for reason in cancel.failed()}

    def committed(self) -> ToolCallResult | None:
        if not self.plan.record.has_marker:
            return None  # a fresh id: nothing was committed under it before
        return self.commits._original(self.plan.session.id, self.plan.record.call.id, self.failed)

    def metadata_failure(self, metadata: MetadataWrite) -> SessionStoreError | None:
        index = self.plan.metadata_index
        if index not in self.failed:
            return None
        table = self.commits.table
        item = self.failed[index].item or table.read_item(metadata.session_id, consistent=True)
        # The state that won as its metadata item tells it (ALL_OLD, no further read): its
        # context items are not read here (a rerun reads the session again, context and all).
        return metadata.failure(session_from_item(item) if item else None)

    def refused(self, index: int, intent: ExtraPut | ConditionCheck) -> bool:
        return index in self.failed


def _same_request(original: ToolCallResult, call: ToolCall) -> ToolCallResult:
    """``original`` when it answers ``call`` (a replay of the same request), else
    IdempotencyKeyReused: another request's result is never returned for this one."""
    if not original.answers(call.request_hash):
        raise IdempotencyKeyReused(call.id)
    return original


def _held_bytes(session: Session) -> int:
    """What the metadata update leaves in place: its context (the size its writes recorded, so a
    160 KiB context is not walked on every call), its attributes and their versions."""
    held: dict[str, Any] = {ts.ATTRIBUTES: session.attributes, ts.ATTRIBUTE_VERSIONS: session.attribute_versions or {}}
    if session.context_bytes is None:
        held[ts.CONTEXT] = session.context  # an item from before context_bytes was kept
    return item_size(to_item(held)) + (session.context_bytes or 0)
