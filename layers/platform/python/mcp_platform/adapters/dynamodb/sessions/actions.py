"""A commit plan (``application.sessions.commit_plan``) as the store's TransactWriteItems actions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import AttributeValue, to_attr, to_item
from mcp_platform.adapters.dynamodb.sessions.items import committed_event_attribute, committed_event_text, meta_key
from mcp_platform.adapters.dynamodb.sessions.table import (
    CONTEXT_HAS_ROOM,
    SessionTable,
    alive_condition,
    context_clause,
    context_item,
)
from mcp_platform.application.sessions.changes import ConditionCheck, ExtraPut
from mcp_platform.application.sessions.commit_plan import CommitPlan, MetadataWrite, RecordWrite

_NOT_EXISTS = "attribute_not_exists(#pk)"


class CommitActions:
    """The TransactWriteItems actions of a commit plan, in the plan's order: the record and
    marker Puts, the metadata Update (the version arithmetic: :mod:`.store`), and the tool's own
    writes and checks, whose intent (``ExtraPut``, ``ConditionCheck``) becomes condition
    expressions here. What is written and under which conditions is the plan's: this is only
    how DynamoDB spells it."""

    def __init__(self, table: SessionTable) -> None:
        self.table = table

    def commit(self, plan: CommitPlan) -> list[dict[str, Any]]:
        call = plan.record.call
        actions = self.record_puts(plan.record)
        actions.append(self.metadata_update(plan.metadata, trace_id=call.trace_id, span_id=call.span_id))
        actions.extend(self.extra_put(put) for put in plan.extra_puts)
        actions.extend(self.condition_check(check) for check in plan.condition_checks)
        if plan.metadata.context_append and self.table.listed(plan.metadata.context_append) is None:
            # Last, after the tool's own actions: their positions are the plan's (metadata_index + 1...).
            actions.append(self.context_put(plan.metadata, trace_id=call.trace_id, span_id=call.span_id))
        return actions

    def context_put(
        self, write: MetadataWrite, *, trace_id: str | None = None, span_id: str | None = None
    ) -> dict[str, Any]:
        """The context item of a commit that appends (D1/D3 as amended): what this call appends,
        under its own key, so the commit never rewrites the context before it. Unconditioned: its
        key holds the call's id, whose record (and marker) Put is ``attribute_not_exists`` in the
        same transaction, and the metadata Update carries the "alive" and budget conditions."""
        item = context_item(
            write.session_id, write.context_sk, write.context_append, trace_attributes(trace_id, span_id)
        )
        return {"Put": {"TableName": self.table.table_name, "Item": item}}

    def record_puts(self, write: RecordWrite) -> list[dict[str, Any]]:
        """The record and marker Puts, each ``attribute_not_exists`` (D4). The result is stored
        once, in the marker (what replay reads, in the same BatchGetItem as the session); the
        record keeps the arguments and points at it. A call without a marker (a fresh id) is
        the record alone, holding its result too."""
        call, record, marker = write.call, write.record, write.marker
        common = {ts.PK: ts.session_pk(write.session_id), ts.TOOL_CALL_ID: call.id, ts.TOOL_NAME: call.name}
        common.update(trace_attributes(call.trace_id, call.span_id))
        record_item = to_item(
            {
                **common,
                ts.SK: record.sk,
                ts.IS_ERROR: call.is_error,
                ts.RESULT_BYTES: record.result_bytes,
                ts.STARTED_AT: record.started_at,
                ts.FINISHED_AT: record.finished_at,
            }
        )
        record_item[ts.ARGUMENTS] = to_attr(call.arguments)
        # The result is stored once: where the marker is, else on the record.
        if write.has_marker:
            record_item[ts.RESULT_SK] = to_attr(record.result_sk)
        else:
            record_item[ts.RESULT] = to_attr(call.result)
        if call.event is not None:
            record_item[ts.COMMITTED_EVENT] = (
                committed_event_text(call.event)
                if self.table.event_as_text
                else committed_event_attribute(record_item, call.event)
            )
        names = {"#pk": ts.PK}
        record_put = {
            "Put": {
                "TableName": self.table.table_name,
                "Item": record_item,
                "ConditionExpression": _NOT_EXISTS,
                "ExpressionAttributeNames": names,
            }
        }
        if not write.has_marker:
            return [record_put]
        marker_item = to_item(
            {
                **common,
                ts.SK: record.result_sk,
                ts.IS_ERROR: call.is_error,
                ts.RECORD_SK: marker.record_sk,
                ts.COMMITTED_AT: marker.committed_at,
                ts.REQUEST_HASH: marker.request_hash,
            }
        )
        marker_item[ts.RESULT] = to_attr(call.result)
        return [
            record_put,
            {
                "Put": {
                    "TableName": self.table.table_name,
                    "Item": marker_item,
                    "ConditionExpression": _NOT_EXISTS,
                    "ExpressionAttributeNames": names,
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
        ]

    def metadata_update(
        self, write: MetadataWrite, *, trace_id: str | None = None, span_id: str | None = None
    ) -> dict[str, Any]:
        """The metadata Update of a commit: its condition is "alive" at the plan's time, plus
        ``#v = :expected`` (D2), each attribute version read, and the context's room when it
        appends (D3). ``trace_id``/``span_id``: the committing request's, set on the metadata
        (the trace of its last commit), so the audit record of this change names the trace."""
        condition, names, values = alive_condition(write.now)
        names.update({"#v": ts.VERSION, "#ua": ts.UPDATED_AT, "#tc": ts.TOOL_CALLS})
        values.update(
            {":one": to_attr(1), ":zero": to_attr(0), ":ttl": to_attr(write.ttl), ":ua": to_attr(write.updated_at)}
        )
        # The committed-call counter rides in the same Update (no extra write, exact under retry:
        # a replayed id never reaches this action because its marker Put fails first).
        expression = "SET #v = #v + :one, #ttl = :ttl, #ua = :ua, #tc = if_not_exists(#tc, :zero) + :one"
        if trace_id is not None and span_id is not None:
            expression += ", #trace = :trace, #span = :span"
            names.update({"#trace": ts.TRACE_ID, "#span": ts.SPAN_ID})
            values.update({":trace": to_attr(trace_id), ":span": to_attr(span_id)})
        if write.context_room is not None:
            clause, more_names, more_values = context_clause(
                write.context_bytes, write.context_room, listed=self.table.listed(write.context_append)
            )
            expression += ", " + clause
            names.update(more_names)
            values.update(more_values)
            condition += f" AND {CONTEXT_HAS_ROOM}"
        if write.expected_version is not None:
            condition += " AND #v = :expected"
            values[":expected"] = to_attr(write.expected_version)
        if write.attributes is not None:
            expression += ", #at = :at, #avs = :avs"
            names.update({"#at": ts.ATTRIBUTES, "#avs": ts.ATTRIBUTE_VERSIONS})
            # Exact under ``#v = :expected``: the held attributes are the stored ones.
            values.update(
                {":at": to_attr(dict(write.attributes)), ":avs": to_attr(dict(write.attribute_versions or {}))}
            )
        if write.seen:
            checks, sets = _attribute_clauses(write, names, values)
            condition = " AND ".join([condition, *checks])
            expression = ", ".join([expression, *sets])
        return {
            "Update": {
                "TableName": self.table.table_name,
                "Key": meta_key(write.session_id),
                "UpdateExpression": expression,
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

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


def _attribute_clauses(
    write: MetadataWrite, names: dict[str, str], values: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """Conditions and SET clauses of a commit conditioned attribute by attribute: for each
    attribute read, ``attribute_versions[n]`` still at the version seen (absent when 0); for
    each attribute changed, its value and ``attribute_versions[n] = seen + 1``."""
    names["#avs"] = ts.ATTRIBUTE_VERSIONS
    if write.attribute_changes:
        names["#at"] = ts.ATTRIBUTES
    checks: list[str] = []
    sets: list[str] = []
    for i, (name, seen) in enumerate(sorted(write.seen.items())):
        names[f"#a{i}"] = name
        if seen:
            checks.append(f"#avs.#a{i} = :seen{i}")
            values[f":seen{i}"] = to_attr(seen)
        else:
            checks.append(f"attribute_not_exists(#avs.#a{i})")
        if name in write.attribute_changes:
            sets.append(f"#at.#a{i} = :new{i}, #avs.#a{i} = :next{i}")
            values[f":new{i}"] = to_attr(write.attribute_changes[name])
            values[f":next{i}"] = to_attr(write.next_versions[name])
    return checks, sets


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
