"""Building the store's TransactWriteItems actions, and the opaque list cursor."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import AttributeValue, attr_size, to_attr, to_item
from mcp_platform.adapters.dynamodb.sessions.items import meta_key
from mcp_platform.adapters.dynamodb.sessions.table import ATTRIBUTES_BUDGET_BYTES, CONTEXT_HAS_ROOM, SessionTable
from mcp_platform.application.sessions.changes import AttributeWrites, ConditionCheck, ExtraPut
from mcp_platform.application.sessions.errors import CallRecordTooLarge, InvalidCursor, SessionCapacityExceeded
from mcp_platform.application.sessions.model import Session, ToolCall, ToolCallResult
from mcp_platform.protocol.clock import iso_utc

METADATA = 2  # position of the metadata Update after the record [0] and marker [1] Puts
_NOT_EXISTS = "attribute_not_exists(#pk)"


class CommitActions:
    """The TransactWriteItems actions of a tool-call commit: the record and marker Puts, the
    metadata Update (the version arithmetic: :mod:`.store`), and the tool's own writes and checks,
    whose intent (``ExtraPut``, ``ConditionCheck``) becomes condition expressions here."""

    def __init__(self, table: SessionTable) -> None:
        self.table = table

    def tool_puts(self, session_id: str, call: ToolCall) -> tuple[list[dict[str, Any]], ToolCallResult]:
        if not call.id:
            raise ValueError("tool call id is required")
        now = self.table.clock.now()
        started = iso_utc(call.started_at if call.started_at is not None else now)
        record_sk = ts.tool_record_sk(started, call.id)
        committed = iso_utc(now)
        # The result is stored once, in the marker (what replay reads, in the same BatchGetItem
        # as the session); the record keeps the arguments and points at it.
        arguments, stored_result = to_attr(call.arguments), to_attr(call.result)
        result_bytes = attr_size(stored_result)
        stored = attr_size(arguments) + result_bytes
        if stored > self.table.record_budget_bytes:
            raise CallRecordTooLarge(call.id, self.table.record_budget_bytes, stored)
        marker_sk = ts.tool_call_marker_sk(call.id)
        common = {ts.PK: ts.session_pk(session_id), ts.TOOL_CALL_ID: call.id, ts.TOOL_NAME: call.name}
        common.update(trace_attributes(call.trace_id, call.span_id))
        record = to_item(
            {
                **common,
                ts.SK: record_sk,
                ts.IS_ERROR: call.is_error,
                ts.RESULT_SK: marker_sk,
                ts.RESULT_BYTES: result_bytes,
                ts.STARTED_AT: started,
                ts.FINISHED_AT: iso_utc(call.finished_at if call.finished_at is not None else now),
            }
        )
        record[ts.ARGUMENTS] = arguments
        marker = to_item(
            {
                **common,
                ts.SK: marker_sk,
                ts.IS_ERROR: call.is_error,
                ts.RECORD_SK: record_sk,
                ts.COMMITTED_AT: committed,
                ts.REQUEST_HASH: call.request_hash,
            }
        )
        marker[ts.RESULT] = stored_result
        names = {"#pk": ts.PK}
        actions = [
            {
                "Put": {
                    "TableName": self.table.table_name,
                    "Item": record,
                    "ConditionExpression": _NOT_EXISTS,
                    "ExpressionAttributeNames": names,
                }
            },
            {
                "Put": {
                    "TableName": self.table.table_name,
                    "Item": marker,
                    "ConditionExpression": _NOT_EXISTS,
                    "ExpressionAttributeNames": names,
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
        ]
        result = ToolCallResult(call.id, call.name, call.result, call.is_error, record_sk, committed, call.request_hash)
        return actions, result

    def metadata_update(
        self,
        session: Session,
        context_append: list[Any],
        *,
        expected_version: int | None,
        attributes: dict[str, Any] | None = None,
        by_attribute: AttributeWrites | None = None,
        trace_id: str | None = None,
        span_id: str | None = None,
    ) -> dict[str, Any]:
        """The metadata Update of a commit (the version arithmetic: :mod:`.store`).

        ``expected_version`` None and no ``by_attribute``: append-only, conditioned on "alive"
        (and the context budget) alone, so parallel calls never conflict. An int: read-modify-
        write under the D2 version condition, which ``attributes`` (the whole map) requires.
        ``by_attribute``: read-modify-write conditioned on the version of each attribute the run
        read, so appends and writes to other attributes never conflict with it.

        ``trace_id``/``span_id``: the committing request's, set on the metadata (the trace of its
        last commit), so the audit record of this change names the trace."""
        if by_attribute is not None and (expected_version is not None or attributes is not None):
            raise ValueError("a commit is conditioned on the session's version or on attributes, not both")
        condition, names, values = self.table.alive()
        names.update({"#v": ts.VERSION, "#ua": ts.UPDATED_AT, "#tc": ts.TOOL_CALLS})
        values.update(
            {
                ":one": to_attr(1),
                ":zero": to_attr(0),
                ":ttl": to_attr(self.table.next_ttl()),
                ":ua": to_attr(self.table.iso_now()),
            }
        )
        # The committed-call counter rides in the same Update (no extra write, exact under retry:
        # a replayed id never reaches this action because its marker Put fails first).
        expression = "SET #v = #v + :one, #ttl = :ttl, #ua = :ua, #tc = if_not_exists(#tc, :zero) + :one"
        if trace_id is not None and span_id is not None:
            expression += ", #trace = :trace, #span = :span"
            names.update({"#trace": ts.TRACE_ID, "#span": ts.SPAN_ID})
            values.update({":trace": to_attr(trace_id), ":span": to_attr(span_id)})
        if context_append:
            clause, more_names, more_values = self.table.context_growth(session.id, context_append)
            expression += ", " + clause
            names.update(more_names)
            values.update(more_values)
            condition += f" AND {CONTEXT_HAS_ROOM}"
        if expected_version is not None:
            condition += " AND #v = :expected"
            values[":expected"] = to_attr(expected_version)
        if attributes is not None:
            if expected_version is None:
                raise ValueError("attributes are written only under the version condition (read-modify-write)")
            stored = self._admit_attributes(session.id, attributes)
            expression += ", #at = :at, #avs = :avs"
            names.update({"#at": ts.ATTRIBUTES, "#avs": ts.ATTRIBUTE_VERSIONS})
            # Exact under ``#v = :expected``: the held attributes are the stored ones.
            values.update({":at": stored, ":avs": to_attr(session.versions_after(attributes))})
        if by_attribute is not None:
            checks, sets = self._attribute_clauses(session, by_attribute, names, values)
            condition = " AND ".join([condition, *checks])
            expression = ", ".join([expression, *sets])
        return {
            "Update": {
                "TableName": self.table.table_name,
                "Key": meta_key(session.id),
                "UpdateExpression": expression,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _attribute_clauses(
        self, session: Session, writes: AttributeWrites, names: dict[str, str], values: dict[str, Any]
    ) -> tuple[list[str], list[str]]:
        """Conditions and SET clauses of a commit conditioned attribute by attribute: for each
        attribute read, ``attribute_versions[n]`` still at the version seen (absent when 0); for
        each attribute changed, its value and ``attribute_versions[n] = seen + 1``."""
        if session.attribute_versions is None:
            raise ValueError("the session item keeps no attribute versions: commit under its version")
        unconditioned = writes.values.keys() - writes.seen.keys()
        if unconditioned:
            raise ValueError(f"written attributes must be conditioned on the version read: {sorted(unconditioned)}")
        changes = writes.changes(session.attributes)
        # The whole map as this run knows it: exact for what it read; attributes written
        # meanwhile by other runs are counted as loaded (DynamoDB's item limit bounds the rest).
        self._admit_attributes(session.id, {**session.attributes, **changes})
        if writes.seen:
            names["#avs"] = ts.ATTRIBUTE_VERSIONS
        if changes:
            names["#at"] = ts.ATTRIBUTES
        checks: list[str] = []
        sets: list[str] = []
        for i, (name, seen) in enumerate(sorted(writes.seen.items())):
            names[f"#a{i}"] = name
            if seen:
                checks.append(f"#avs.#a{i} = :seen{i}")
                values[f":seen{i}"] = to_attr(seen)
            else:
                checks.append(f"attribute_not_exists(#avs.#a{i})")
            if name in changes:
                sets.append(f"#at.#a{i} = :new{i}, #avs.#a{i} = :next{i}")
                values[f":new{i}"] = to_attr(changes[name])
                values[f":next{i}"] = to_attr(seen + 1)
        return checks, sets

    @staticmethod
    def _admit_attributes(session_id: str, attributes: Mapping[str, Any]) -> AttributeValue:
        stored = to_attr(dict(attributes))
        if attr_size(stored) > ATTRIBUTES_BUDGET_BYTES:
            raise SessionCapacityExceeded(session_id, "attributes", ATTRIBUTES_BUDGET_BYTES, attr_size(stored))
        return stored

    def extra_put(self, put: ExtraPut) -> dict[str, Any]:
        body: dict[str, Any] = {"TableName": put.table or self.table.table_name, "Item": to_item(put.item)}
        if put.if_absent:
            body["ConditionExpression"] = "attribute_not_exists(#pk)"
            body["ExpressionAttributeNames"] = {"#pk": put.partition_key or ts.PK}
        elif put.expect:
            _add_condition(body, *_equals(put.expect))
        return {"Put": body}

    def condition_check(self, check: ConditionCheck) -> dict[str, Any]:
        key = to_item(check.key)
        if check.exists:
            # Any key attribute of ``key`` exists on the item exactly when the item does.
            names = {"#key": next(iter(key))}
            parts = ["attribute_exists(#key)"]
            values: dict[str, AttributeValue] = {}
            if check.expect:
                equals, more_names, values = _equals(check.expect)
                parts.append(equals)
                names.update(more_names)
            return self.check_item(key, " AND ".join(parts), names, values, check.table)
        return self.check_item(key, "attribute_not_exists(#key)", {"#key": next(iter(key))}, {}, check.table)

    def check_item(
        self,
        key: dict[str, Any],
        condition: str,
        names: dict[str, str],
        values: dict[str, Any],
        table: str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "TableName": table or self.table.table_name,
            "Key": key,
            "ConditionExpression": condition,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if names:
            body["ExpressionAttributeNames"] = names
        if values:
            body["ExpressionAttributeValues"] = values
        return {"ConditionCheck": body}


def trace_attributes(trace_id: str | None, span_id: str | None) -> dict[str, str]:
    """The trace attributes of an item written for a traced request (none for an untraced one)."""
    if trace_id is None or span_id is None:
        return {}
    return {ts.TRACE_ID: trace_id, ts.SPAN_ID: span_id}


def _equals(expect: Mapping[str, Any]) -> tuple[str, dict[str, str], dict[str, AttributeValue]]:
    """``#e0 = :e0 AND ...``: each attribute of ``expect`` has its value."""
    names: dict[str, str] = {}
    values: dict[str, AttributeValue] = {}
    parts: list[str] = []
    for i, (name, value) in enumerate(expect.items()):
        names[f"#e{i}"] = name
        values[f":e{i}"] = to_attr(value)
        parts.append(f"#e{i} = :e{i}")
    return " AND ".join(parts), names, values


def _add_condition(body: dict[str, Any], condition: str, names: dict[str, str], values: dict[str, Any]) -> None:
    body["ConditionExpression"] = condition
    body["ExpressionAttributeNames"] = names
    body["ExpressionAttributeValues"] = values


def reject_repeated_keys(actions: list[dict[str, Any]]) -> None:
    seen: set[tuple[str, str, str]] = set()
    for action in actions:
        ((_, body),) = action.items()
        keys = body.get("Key") or body["Item"]
        if ts.PK not in keys:
            continue  # another table's key schema: DynamoDB itself will judge it
        ident = (body["TableName"], _key_value(keys.get(ts.PK)), _key_value(keys.get(ts.SK)))
        if ident in seen:
            raise ValueError(f"two transaction actions on one item {ident}: not allowed by DynamoDB (D10)")
        seen.add(ident)


def _key_value(attr: Any) -> Any:
    """A key attribute (``{"S": "..."}``) as a hashable value, without encoding it."""
    return tuple(attr.items()) if isinstance(attr, dict) else attr


def encode_cursor(sk: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"sk": sk}).encode()).decode()


def decode_cursor(cursor: str) -> str:
    try:
        sk = json.loads(base64.urlsafe_b64decode(cursor.encode()))["sk"]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise InvalidCursor("malformed cursor") from exc
    # A record key is about 70 characters; a longer one was never issued (and real DynamoDB
    # refuses sort keys over 1,024 bytes in ExclusiveStartKey).
    if not isinstance(sk, str) or not sk.startswith(ts.TOOL_RECORD_PREFIX) or len(sk) > 256:
        raise InvalidCursor("malformed cursor")
    return sk
