"""The session domain's values as items of the session table, and back (layout: table_schema).

The one place that knows which attribute of an item holds which field of a
:class:`~mcp_platform.application.sessions.model.Session`, a tool-call marker or a record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import AttributeValue, Item, from_attr, from_item, to_attr, to_item
from mcp_platform.application.events.schema import STATUS_ERROR, STATUS_OK, ToolCallEvent
from mcp_platform.application.sessions.errors import SessionNotFound
from mcp_platform.application.sessions.model import KIND_APPLICATION, Session, ToolCallRecord, ToolCallResult
from mcp_platform.protocol import compact_json

Key = dict[str, AttributeValue]


def meta_key(session_id: str) -> Key:
    """The key of a session's metadata item. Every read and write of a session builds it first:
    an id that cannot have been minted is "not found" here, before any AWS call (no key of
    client-chosen size)."""
    if not ts.is_session_id(session_id):
        raise SessionNotFound(str(session_id)[:64])
    return {ts.PK: {"S": ts.session_pk(session_id)}, ts.SK: {"S": ts.METADATA_SK}}


def marker_key(session_id: str, tool_call_id: str) -> Key:
    if not ts.is_session_id(session_id):
        raise SessionNotFound(str(session_id)[:64])
    return {ts.PK: {"S": ts.session_pk(session_id)}, ts.SK: {"S": ts.tool_call_marker_sk(tool_call_id)}}


def session_item(session: Session) -> Item:
    """The metadata item of a new session (its initial attributes count as never changed). It
    holds no context: the context is kept in context items (``ctx#``), counted here."""
    return to_item(
        {
            ts.PK: ts.session_pk(session.id),
            ts.SK: ts.METADATA_SK,
            ts.OWNER: session.owner,
            ts.STATUS: session.status,
            ts.VERSION: session.version,
            ts.TTL: session.ttl,
            ts.KIND: session.kind,
            ts.ATTRIBUTES: session.attributes,
            ts.ATTRIBUTE_VERSIONS: dict(session.attribute_versions or {}),
            ts.CREATED_AT: session.created_at,
            ts.UPDATED_AT: session.updated_at,
        }
    )


def session_from_item(item: Mapping[str, AttributeValue]) -> Session:
    values = from_item(item)
    return Session(
        id=ts.session_id_from_pk(values[ts.PK]),
        owner=values.get(ts.OWNER, ""),
        status=values.get(ts.STATUS, ""),
        version=int(values.get(ts.VERSION, 0)),
        ttl=int(values.get(ts.TTL, 0)),
        context=list(values.get(ts.CONTEXT) or []),  # an item from before the context items: its list
        kind=values.get(ts.KIND, KIND_APPLICATION),
        attributes=dict(values.get(ts.ATTRIBUTES) or {}),
        created_at=values.get(ts.CREATED_AT, ""),
        updated_at=values.get(ts.UPDATED_AT, ""),
        tool_calls=int(values.get(ts.TOOL_CALLS, 0)),
        context_bytes=int(values[ts.CONTEXT_BYTES]) if ts.CONTEXT_BYTES in values else None,
        attribute_versions=(
            {name: int(v) for name, v in values[ts.ATTRIBUTE_VERSIONS].items()}
            if ts.ATTRIBUTE_VERSIONS in values
            else None
        ),
    )


def marker_from_item(item: Mapping[str, AttributeValue]) -> ToolCallResult:
    """What a tool call's idempotency marker (``sk=toolcall#<id>``) holds."""
    values = from_item(item)
    return ToolCallResult(
        tool_call_id=values[ts.TOOL_CALL_ID],
        tool_name=values.get(ts.TOOL_NAME, ""),
        result=values.get(ts.RESULT),
        is_error=bool(values.get(ts.IS_ERROR, False)),
        record_sk=values.get(ts.RECORD_SK, ""),
        committed_at=values.get(ts.COMMITTED_AT, ""),
        request_hash=values.get(ts.REQUEST_HASH, ""),
    )


def record_from_item(item: Mapping[str, AttributeValue]) -> ToolCallRecord:
    """An immutable tool-call record (``sk=tool#<ISO8601>#<id>``)."""
    values: dict[str, Any] = from_item(item)
    return ToolCallRecord(
        tool_call_id=values[ts.TOOL_CALL_ID],
        tool_name=values.get(ts.TOOL_NAME, ""),
        arguments=dict(values.get(ts.ARGUMENTS) or {}),
        is_error=bool(values.get(ts.IS_ERROR, False)),
        started_at=values.get(ts.STARTED_AT, ""),
        finished_at=values.get(ts.FINISHED_AT, ""),
        sk=values[ts.SK],
        result_sk=values.get(ts.RESULT_SK, ""),
        result_bytes=int(values.get(ts.RESULT_BYTES, 0)),
    )


def committed_event_attribute(record: Mapping[str, AttributeValue], event: ToolCallEvent) -> AttributeValue:
    """The ``event`` attribute of a committed call's record (K10): the event's wire fields that
    the record does not already hold (:func:`_event_fields_of_record`), as a map; the relay gives
    the event back whole from the record's image (:func:`committed_event_of`). An event the record
    would not give back exactly (a field the record sets that the event lacks) is kept whole, as
    its wire JSON."""
    wire = event.to_dict()
    held = _event_fields_of_record(record)
    if not held.keys() <= wire.keys():
        return committed_event_text(event)
    return to_attr({name: value for name, value in wire.items() if held.get(name) != value})


def committed_event_text(event: ToolCallEvent) -> AttributeValue:
    """The ``event`` attribute as releases up to 0.3 write it, and read it: the whole wire JSON."""
    return {"S": event.to_bytes().decode()}


def committed_event_of(record: Mapping[str, AttributeValue]) -> bytes | None:
    """The wire JSON of the event a commit stored on a record (either form), None without one."""
    stored = record.get(ts.COMMITTED_EVENT)
    if not isinstance(stored, Mapping):
        return None
    if isinstance(stored.get("S"), str):
        return str(stored["S"]).encode()
    if not isinstance(stored.get("M"), Mapping):
        return None
    # Not validated here: the relay reads it as it reads every event (``ToolCallEvent.from_bytes``).
    return compact_json.dumps({**_event_fields_of_record(record), **from_attr(stored)})


def _event_fields_of_record(record: Mapping[str, AttributeValue]) -> dict[str, Any]:
    """What a call's record says of its event, under the event's wire names: the call's id, tool
    and session (its key), its times (a commit emits the event when the call finished), whether
    it failed, the request's trace, and that the commit recorded it."""

    def value(name: str) -> Any:
        return from_attr(record[name]) if name in record else None

    held = {
        "event_id": value(ts.TOOL_CALL_ID),
        "tool": value(ts.TOOL_NAME),
        "status": STATUS_ERROR if value(ts.IS_ERROR) else STATUS_OK,
        "started_at": value(ts.STARTED_AT),
        "finished_at": value(ts.FINISHED_AT),
        "emitted_at": value(ts.FINISHED_AT),
        "session_id": ts.session_id_from_pk(value(ts.PK)),
        "trace_id": value(ts.TRACE_ID),
        "span_id": value(ts.SPAN_ID),
        "recorded": True,
    }
    return {name: held_value for name, held_value in held.items() if held_value is not None}
