"""Tool-call operations: the idempotent read, record (D4), commit (D10) and listing."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from mcp_platform import table_schema as ts
from mcp_platform.sessions._core import ALIVE, StoreCore
from mcp_platform.sessions.clock import iso_utc
from mcp_platform.sessions.codec import AttributeValue, from_attr, item_size, to_attr, to_item
from mcp_platform.sessions.errors import (
    DuplicateToolCall,
    IdempotencyTokenReused,
    InvalidCursor,
    PreconditionFailed,
    SessionEnded,
    SessionExpired,
    SessionNotFound,
    StoreThrottled,
    TransactionFailed,
    VersionConflict,
)
from mcp_platform.sessions.model import (
    CommitResult,
    ConditionCheck,
    ExtraPut,
    Session,
    ToolCall,
    ToolCallPage,
    ToolCallRecord,
    ToolCallResult,
)
from mcp_platform.sessions.transaction import (
    ConditionFailed,
    TokenMismatch,
    check_limits,
    client_request_token,
    transact_write,
)

RECORD, MARKER, METADATA = 0, 1, 2  # fixed positions of the store's own transaction actions
_NOT_EXISTS = "attribute_not_exists(#pk)"


class ToolCallOps(StoreCore):
    def load_for_tool_call(
        self, session_id: str, tool_call_id: str, *, owner: str | None
    ) -> tuple[Session, ToolCallResult | None]:
        """ONE BatchGetItem, ConsistentRead (X4: version and expiry decisions follow): the
        metadata item and the tool call's idempotency marker. A marker means "replay: answer
        with the stored result". UnprocessedKeys (throttling only) are fetched again."""
        keys = [self._meta_key(session_id), self._marker_key(session_id, tool_call_id)]
        found: dict[str, dict[str, AttributeValue]] = {}
        request: dict[str, Any] = {self.table_name: {"Keys": keys, "ConsistentRead": True}}
        for _ in self.backoff.attempts():
            response = self.gateway.call("batch_get_item", RequestItems=request)
            for item in response.get("Responses", {}).get(self.table_name, []):
                found[item[ts.SK]["S"]] = item
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
        if request:
            raise StoreThrottled("batch_get_item left keys unprocessed on every attempt")
        session = self._visible(session_id, found.get(ts.METADATA_SK), owner)
        marker = found.get(ts.tool_call_marker_sk(tool_call_id))
        return session, ToolCallResult.from_marker_item(marker) if marker else None

    def record_tool_call(self, session_id: str, call: ToolCall, *, owner: str | None = None) -> ToolCallResult:
        """D4: write the record and its marker with ``attribute_not_exists`` (plus a
        ConditionCheck that the session is alive). A replayed id is a silent success that
        returns the original result."""
        actions, result = self._tool_puts(session_id, call)
        condition, names, values = self._alive(owner)
        actions.append(self._condition_check(self._meta_key(session_id), condition, names, values))
        try:
            transact_write(self.gateway, actions, client_request_token(call.id), self.backoff)
        except ConditionFailed as cancel:
            failed = {r.index: r for r in cancel.failed()}
            original = self._original(session_id, call.id, failed)
            if original is not None:
                return original
            if METADATA in failed:
                item = failed[METADATA].item or self._read_item(session_id, consistent=True)
                self._raise_not_alive(session_id, item, owner)
            raise TransactionFailed(cancel.reasons) from cancel
        except TokenMismatch as exc:
            return self._replayed(session_id, call.id, exc)
        return result

    def commit_tool_call(
        self,
        session: Session | str,
        call: ToolCall,
        *,
        owner: str | None = None,
        context_append: Sequence[Any] = (),
        extra_puts: Sequence[ExtraPut] = (),
        condition_checks: Sequence[ConditionCheck] = (),
    ) -> CommitResult:
        """D10: one TransactWriteItems, ClientRequestToken derived from the tool call id:
        [0] Put record, [1] Put marker (both ``attribute_not_exists``), [2] Update metadata
        (version+1, sliding ttl D7, ``list_append`` context D3) conditioned on "alive AND
        #v = :expected", then ``extra_puts`` and ``condition_checks``. Pass the Session you
        hold and no read is made; pass an id and one consistent read is made first."""
        if isinstance(session, str):
            session = self.get_session(session, owner=owner, consistent=True)
        elif owner is not None and session.owner != owner:
            raise SessionNotFound(session.id)
        elif session.status != ts.STATUS_ACTIVE:
            raise SessionEnded(session.id)
        elif session.ttl <= self.clock.now():
            raise SessionExpired(session.id)  # known locally: no call needed
        actions, result = self._tool_puts(session.id, call)
        actions.append(self._metadata_update(session, list(context_append)))
        actions.extend(self._extra_put(put) for put in extra_puts)
        actions.extend(
            self._condition_check(to_item(c.key), c.condition, dict(c.names), to_item(c.values), c.table)
            for c in condition_checks
        )
        labels = [p.label or f"extra_puts[{i}]" for i, p in enumerate(extra_puts)]
        labels += [c.label or f"condition_checks[{i}]" for i, c in enumerate(condition_checks)]
        _reject_repeated_keys(actions)
        held = to_item({ts.CONTEXT: session.context, ts.ATTRIBUTES: session.attributes})
        check_limits(actions, extra_bytes=item_size(held))
        try:
            transact_write(self.gateway, actions, client_request_token(call.id), self.backoff)
        except ConditionFailed as cancel:
            raise self._commit_failure(session, call.id, cancel, labels, owner) from cancel
        except TokenMismatch as exc:
            raise DuplicateToolCall(self._replayed(session.id, call.id, exc)) from exc
        ttl = int(from_attr(actions[METADATA]["Update"]["ExpressionAttributeValues"][":ttl"]))
        updated = replace(
            session,
            version=session.version + 1,
            ttl=ttl,
            context=[*session.context, *context_append],
            updated_at=result.committed_at,
        )
        return CommitResult(session=updated, result=result)

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
        self.get_session(session_id, owner=owner, consistent=consistent)
        pk = to_attr(ts.session_pk(session_id))
        params: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": ts.PK, "#sk": ts.SK},
            "ExpressionAttributeValues": {":pk": pk, ":prefix": to_attr(ts.TOOL_RECORD_PREFIX)},
            "Limit": limit,
            "ConsistentRead": consistent,
        }
        if cursor:
            params["ExclusiveStartKey"] = {ts.PK: pk, ts.SK: to_attr(_decode_cursor(cursor))}
        response = self.gateway.call("query", **params)
        records = [ToolCallRecord.from_item(item) for item in response.get("Items", [])]
        last = response.get("LastEvaluatedKey")
        return ToolCallPage(records=records, next_cursor=_encode_cursor(last[ts.SK]["S"]) if last else None)

    # -- building actions ----------------------------------------------------------------------
    def _tool_puts(self, session_id: str, call: ToolCall) -> tuple[list[dict[str, Any]], ToolCallResult]:
        if not call.id:
            raise ValueError("tool call id is required")
        now = self.clock.now()
        started = iso_utc(call.started_at if call.started_at is not None else now)
        record_sk = ts.tool_record_sk(started, call.id)
        committed = iso_utc(now)
        common = {ts.PK: ts.session_pk(session_id), ts.TOOL_CALL_ID: call.id, ts.TOOL_NAME: call.name}
        outcome = {ts.RESULT: call.result, ts.IS_ERROR: call.is_error}
        record = {
            **common, **outcome, ts.SK: record_sk, ts.ARGUMENTS: call.arguments, ts.STARTED_AT: started,
            ts.FINISHED_AT: iso_utc(call.finished_at if call.finished_at is not None else now),
        }
        marker = {
            **common, **outcome, ts.SK: ts.tool_call_marker_sk(call.id), ts.RECORD_SK: record_sk,
            ts.COMMITTED_AT: committed,
        }
        names = {"#pk": ts.PK}
        actions = [
            {"Put": {"TableName": self.table_name, "Item": to_item(record),
                     "ConditionExpression": _NOT_EXISTS, "ExpressionAttributeNames": names}},
            {"Put": {"TableName": self.table_name, "Item": to_item(marker),
                     "ConditionExpression": _NOT_EXISTS, "ExpressionAttributeNames": names,
                     "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}},
        ]
        result = ToolCallResult(call.id, call.name, call.result, call.is_error, record_sk, committed)
        return actions, result

    def _metadata_update(self, session: Session, context_append: list[Any]) -> dict[str, Any]:
        _, names, values = self._alive()
        names.update({"#v": ts.VERSION, "#ua": ts.UPDATED_AT})
        values.update(
            {":expected": to_attr(session.version), ":one": to_attr(1),
             ":ttl": to_attr(self._next_ttl()), ":ua": to_attr(self._iso_now())}
        )
        expression = "SET #v = #v + :one, #ttl = :ttl, #ua = :ua"
        if context_append:
            expression += ", #ctx = list_append(if_not_exists(#ctx, :empty), :new)"
            names["#ctx"] = ts.CONTEXT
            values.update({":new": to_attr(context_append), ":empty": {"L": []}})
        return {"Update": {
            "TableName": self.table_name, "Key": self._meta_key(session.id), "UpdateExpression": expression,
            "ConditionExpression": f"{ALIVE} AND #v = :expected", "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values, "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }}

    def _extra_put(self, put: ExtraPut) -> dict[str, Any]:
        body: dict[str, Any] = {"TableName": put.table or self.table_name, "Item": to_item(put.item)}
        if put.condition:
            body["ConditionExpression"] = put.condition
        if put.names:
            body["ExpressionAttributeNames"] = dict(put.names)
        if put.values:
            body["ExpressionAttributeValues"] = to_item(put.values)
        return {"Put": body}

    def _condition_check(
        self, key: dict[str, Any], condition: str, names: dict[str, str],
        values: dict[str, Any], table: str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"TableName": table or self.table_name, "Key": key,
                                "ConditionExpression": condition, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
        if names:
            body["ExpressionAttributeNames"] = names
        if values:
            body["ExpressionAttributeValues"] = values
        return {"ConditionCheck": body}

    # -- interpreting failures -------------------------------------------------------------------
    def _commit_failure(
        self, session: Session, call_id: str, cancel: ConditionFailed, labels: list[str], owner: str | None
    ) -> Exception:
        failed = {r.index: r for r in cancel.failed()}
        original = self._original(session.id, call_id, failed)
        if original is not None:
            return DuplicateToolCall(original)
        if METADATA in failed:
            item = failed[METADATA].item or self._read_item(session.id, consistent=True)
            try:
                current = self._visible(session.id, item, owner)
            except SessionNotFound as gone:
                return gone
            return VersionConflict(session.id, session.version, current)
        extras = sorted(index for index in failed if index > METADATA)
        if extras:
            reason = failed[extras[0]]
            return PreconditionFailed(reason.index, labels[reason.index - METADATA - 1], reason.code, reason.message)
        return TransactionFailed(cancel.reasons)

    def _original(self, session_id: str, call_id: str, failed: dict[int, Any]) -> ToolCallResult | None:
        """The committed result when the marker (or record) condition failed, else None."""
        if MARKER in failed and failed[MARKER].item:
            return ToolCallResult.from_marker_item(failed[MARKER].item)
        if MARKER in failed or RECORD in failed:
            return self._read_marker(session_id, call_id)
        return None

    def _replayed(self, session_id: str, call_id: str, exc: Exception) -> ToolCallResult:
        original = self._read_marker(session_id, call_id)
        if original is None:
            raise IdempotencyTokenReused(call_id) from exc
        return original

    def _read_marker(self, session_id: str, call_id: str) -> ToolCallResult | None:
        response = self.gateway.call(  # X4: deciding "already committed?" needs the latest value
            "get_item", TableName=self.table_name, Key=self._marker_key(session_id, call_id), ConsistentRead=True
        )
        item = response.get("Item")
        return ToolCallResult.from_marker_item(item) if item else None


def _reject_repeated_keys(actions: list[dict[str, Any]]) -> None:
    seen: set[tuple[str, str, str]] = set()
    for action in actions:
        ((_, body),) = action.items()
        keys = body.get("Key") or body["Item"]
        if ts.PK not in keys:
            continue  # another table's key schema: DynamoDB itself will judge it
        ident = (body["TableName"], json.dumps(keys.get(ts.PK)), json.dumps(keys.get(ts.SK)))
        if ident in seen:
            raise ValueError(f"two transaction actions on one item {ident}: not allowed by DynamoDB (D10)")
        seen.add(ident)


def _encode_cursor(sk: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"sk": sk}).encode()).decode()


def _decode_cursor(cursor: str) -> str:
    try:
        sk = json.loads(base64.urlsafe_b64decode(cursor.encode()))["sk"]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise InvalidCursor("malformed cursor") from exc
    if not isinstance(sk, str) or not sk.startswith(ts.TOOL_RECORD_PREFIX):
        raise InvalidCursor("malformed cursor")
    return sk
