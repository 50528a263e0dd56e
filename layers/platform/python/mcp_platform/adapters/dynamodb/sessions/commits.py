"""Tool-call commits: the idempotent read, record (D4), commit (D10) and listing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import AttributeValue, attr_size, from_attr, item_size, to_attr, to_item
from mcp_platform.adapters.dynamodb.sessions.actions import (
    METADATA,
    CommitActions,
    decode_cursor,
    encode_cursor,
    reject_repeated_keys,
)
from mcp_platform.adapters.dynamodb.sessions.items import marker_from_item, marker_key, meta_key, record_from_item
from mcp_platform.adapters.dynamodb.sessions.table import SessionTable
from mcp_platform.adapters.dynamodb.sessions.transaction import (
    ConditionFailed,
    TokenMismatch,
    check_limits,
    client_request_token,
    transact_write,
)
from mcp_platform.application.sessions.changes import AttributeWrites, SessionChanges
from mcp_platform.application.sessions.errors import (
    DuplicateToolCall,
    IdempotencyKeyReused,
    IdempotencyTokenReused,
    PreconditionFailed,
    SessionCapacityExceeded,
    SessionNotFound,
    StoreThrottled,
    TransactionFailed,
    VersionConflict,
    require_alive,
)
from mcp_platform.application.sessions.model import CommitResult, Session, ToolCall, ToolCallPage, ToolCallResult
from mcp_platform.protocol.tools import APPEND_ONLY, READ_ONLY

RECORD, MARKER = 0, 1  # fixed positions of the store's own transaction actions (METADATA = 2)


class ToolCallCommits:
    """A session's tool calls: loaded with the session, recorded, committed with their effects,
    listed."""

    def __init__(self, table: SessionTable) -> None:
        self.table = table
        self.actions = CommitActions(table)

    def load_for_tool_call(
        self,
        session_id: str,
        tool_call_id: str,
        *,
        owner: str | None,
        request_hash: str | None = None,
        consistent: bool = True,
    ) -> tuple[Session, ToolCallResult | None]:
        """ONE BatchGetItem, ConsistentRead (X4: version and expiry decisions follow): the
        metadata item and the tool call's idempotency marker. A marker means "replay: answer
        with the stored result", for the same request only: given ``request_hash``, a marker of
        another request raises IdempotencyKeyReused. UnprocessedKeys (throttling only) are
        fetched again. ``consistent=False`` (X6, a read-only tool that declared it may read a
        cached session): served by the DAX item cache; a cached missing or expired session is
        confirmed by the consistent read before it is an answer."""
        keys = [meta_key(session_id), marker_key(session_id, tool_call_id)]
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
            return self.load_for_tool_call(session_id, tool_call_id, owner=owner, request_hash=request_hash)
        session = self.table.visible(session_id, found.get(ts.METADATA_SK), owner)
        marker = found.get(ts.tool_call_marker_sk(tool_call_id))
        if marker is None:
            return session, None
        prior = marker_from_item(marker)
        if request_hash is not None and not prior.answers(request_hash):
            raise IdempotencyKeyReused(tool_call_id)
        return session, prior

    def record_tool_call(self, session_id: str, call: ToolCall, *, owner: str | None = None) -> ToolCallResult:
        """D4: write the record and its marker with ``attribute_not_exists`` (plus a
        ConditionCheck that the session is alive). A replayed id is a silent success that
        returns the original result (for the same request; another one: IdempotencyKeyReused)."""
        actions, result = self.actions.tool_puts(session_id, call)
        condition, names, values = self.table.alive(owner)
        actions.append(self.actions.check_item(meta_key(session_id), condition, names, values))
        try:
            transact_write(
                self.table.gateway, actions, client_request_token(call.id, actions), self.table.conflict_backoff
            )
        except ConditionFailed as cancel:
            failed = {r.index: r for r in cancel.failed()}
            original = self._original(session_id, call.id, failed)
            if original is not None:
                return _same_request(original, call)
            if METADATA in failed:
                item = failed[METADATA].item or self.table.read_item(session_id, consistent=True)
                self.table.raise_not_alive(session_id, item, owner)
            raise TransactionFailed(cancel.reasons) from cancel
        except TokenMismatch as exc:
            return _same_request(self._replayed(session_id, call.id, exc), call)
        return result

    def commit(self, session: Session, call: ToolCall, changes: SessionChanges) -> CommitResult:
        """D10: one TransactWriteItems: [0] Put record, [1] Put marker (both
        ``attribute_not_exists``), [2] Update metadata (version+1, sliding ttl D7, ``list_append``
        context D3 within its byte budget, ``attributes``), then ``extra_puts`` and
        ``condition_checks``. The metadata condition is "alive", plus (the arithmetic:
        :mod:`.store`):

        * nothing more when append-only: appends commit on top of whatever committed meanwhile;
        * ``attribute_versions[n] = seen`` for each attribute of ``by_attribute`` (a run that read
          attributes one by one): only writes to those attributes conflict with it;
        * else ``#v = :expected`` (D2): any write to the session conflicts with it.

        A lost race raises VersionConflict carrying the current state. ``session`` is the state
        the run held: no read is made. ClientRequestToken: derived from the call id and the
        transaction's content, so a rebuilt (changed) transaction never reuses a token. An id
        already committed raises DuplicateToolCall for the same request, IdempotencyKeyReused
        for another one."""
        if changes.effect == READ_ONLY:
            raise ValueError("a read_only call changes nothing: there is no commit")
        require_alive(session, self.table.clock.now())  # known locally: no call needed
        append_only = changes.effect == APPEND_ONLY
        context_append = changes.context_append
        attributes, by_attribute = changes.attributes, changes.by_attribute
        extra_puts, condition_checks = changes.extra_puts, changes.condition_checks
        held_attributes = dict(attributes) if attributes is not None else None
        if by_attribute is not None and session.attribute_versions is None:
            # An item written before attribute versions were kept: this one commit is conditioned
            # on the session's version, and writes the map (every later one can use it).
            held_attributes = {**session.attributes, **by_attribute.values} if by_attribute.values else None
            by_attribute = None
        expected = None if append_only or by_attribute is not None else session.version
        actions, result = self.actions.tool_puts(session.id, call)
        actions.append(
            self.actions.metadata_update(
                session,
                list(context_append),
                expected_version=expected,
                attributes=held_attributes,
                by_attribute=by_attribute,
                trace_id=call.trace_id,
                span_id=call.span_id,
            )
        )
        actions.extend(self.actions.extra_put(put) for put in extra_puts)
        actions.extend(self.actions.condition_check(check) for check in condition_checks)
        labels = [p.label or f"extra_puts[{i}]" for i, p in enumerate(extra_puts)]
        labels += [c.label or f"condition_checks[{i}]" for i, c in enumerate(condition_checks)]
        reject_repeated_keys(actions)
        check_limits(actions, extra_bytes=_held_bytes(session))
        try:
            transact_write(
                self.table.gateway, actions, client_request_token(call.id, actions), self.table.conflict_backoff
            )
        except ConditionFailed as cancel:
            raise self._commit_failure(session, call, cancel, labels, expected, by_attribute) from cancel
        except TokenMismatch as exc:
            raise DuplicateToolCall(_same_request(self._replayed(session.id, call.id, exc), call)) from exc
        ttl = int(from_attr(actions[METADATA]["Update"]["ExpressionAttributeValues"][":ttl"]))
        attributes_now, versions_now = session.attributes, session.attribute_versions
        if held_attributes is not None:
            attributes_now, versions_now = held_attributes, session.versions_after(held_attributes)
        elif by_attribute is not None:
            written = by_attribute.changes(session.attributes)
            attributes_now = {**session.attributes, **written}
            versions_now = {**(session.attribute_versions or {}), **{n: by_attribute.seen[n] + 1 for n in written}}
        updated = replace(
            session,
            version=session.version + 1,
            ttl=ttl,
            context=[*session.context, *context_append],
            attributes=attributes_now,
            attribute_versions=versions_now,
            updated_at=result.committed_at,
            tool_calls=session.tool_calls + 1,
            context_bytes=_grown_bytes(session.context_bytes, context_append),
        )
        # Under the version condition ``updated`` is exactly what is stored. Otherwise calls
        # committed in between are not in it: version and context are lower bounds then, and
        # each attribute's value is exact together with its version (what a commit conditioned
        # on that version needs).
        return CommitResult(session=updated, result=result, exact=expected is not None)

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
    def _commit_failure(
        self,
        session: Session,
        call: ToolCall,
        cancel: ConditionFailed,
        labels: list[str],
        expected: int | None,
        by_attribute: AttributeWrites | None,
    ) -> Exception:
        failed = {r.index: r for r in cancel.failed()}
        original = self._original(session.id, call.id, failed)
        if original is not None:
            # The marker decides before the metadata: whatever else failed, the id is taken.
            if not original.answers(call.request_hash):
                return IdempotencyKeyReused(call.id)
            return DuplicateToolCall(original)
        if METADATA in failed:
            item = failed[METADATA].item or self.table.read_item(session.id, consistent=True)
            try:
                current = self.table.visible(session.id, item, None)
            except SessionNotFound as gone:
                return gone
            if expected is not None and current.version != expected:
                return VersionConflict(session.id, session.version, current)
            changed = current.changed_attributes(by_attribute.seen) if by_attribute is not None else []
            if changed:
                return VersionConflict(session.id, session.version, current, attributes=changed)
            # Alive and at the versions expected: the context budget refused it.
            return SessionCapacityExceeded(session.id, "context", self.table.context_budget_bytes)
        extras = sorted(index for index in failed if index > METADATA)
        if extras:
            reason = failed[extras[0]]
            return PreconditionFailed(reason.index, labels[reason.index - METADATA - 1], reason.code, reason.message)
        return TransactionFailed(cancel.reasons)

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


def _grown_bytes(recorded: int | None, appended: Sequence[Any]) -> int | None:
    """``context_bytes`` as the metadata update stores it: ``if_not_exists(0) + appended size``."""
    if not appended:
        return recorded
    return (recorded or 0) + attr_size(to_attr(list(appended)))
