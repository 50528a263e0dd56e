"""Versioned tool-call event: the endpoint's record type on the Kinesis stream.

The wire format is compact UTF-8 JSON with a ``v`` (schema version) field. Readers accept every
version up to :data:`SCHEMA_VERSION`; a newer version is refused (a producer deployed ahead of
its consumers must not be half-understood). Validation is strict and raises
:class:`EventSchemaError`, so a poison record is recognisable by type, never by message text.

The stream also carries typed platform events (``session.expired``, A4): a record names its
type in a ``type`` field, and a tool-call event is the one type that may omit it (every
tool-call event ever written omits it). :mod:`.stream_events` dispatches on it; the parsing
helpers here are shared by every type.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcp_platform.application.auth.tenants import TENANT_SYNTAX, is_tenant
from mcp_platform.protocol import compact_json
from mcp_platform.protocol.clock import utc_now_iso
from mcp_platform.protocol.trace_context import is_span_id, is_trace_id

SCHEMA_VERSION = 1
STATUS_OK = "ok"
STATUS_ERROR = "error"
STATUSES = (STATUS_OK, STATUS_ERROR)
TYPE_FIELD = "type"
TOOL_CALL_TYPE = "tool.call"  # the type of a record without a ``type`` field


class EventSchemaError(ValueError):
    """Bytes that are not a valid stream event (bad UTF-8/JSON, unknown type, missing or mistyped field)."""


def parse_iso8601(value: str, name: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise EventSchemaError(f"{name} is not ISO 8601: {value!r}") from exc
    if parsed.tzinfo is None:
        # A naive time is ambiguous across regions; the sort key needs an absolute instant.
        raise EventSchemaError(f"{name} must carry a UTC offset: {value!r}")
    return parsed


def load_object(data: bytes) -> dict[str, Any]:
    """One stream record's data as a JSON object, or EventSchemaError."""
    try:
        body = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EventSchemaError(f"not UTF-8 JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise EventSchemaError("event must be a JSON object")
    return body


def schema_version(body: dict[str, Any], newest: int) -> int:
    """The body's ``v``: an integer no newer than ``newest`` (what this reader understands)."""
    version = body.get("v")
    if not isinstance(version, int) or isinstance(version, bool):
        raise EventSchemaError("missing or non-integer schema version 'v'")
    if version > newest:
        raise EventSchemaError(f"schema version {version} is newer than {newest}")
    return version


def typed_fields(
    body: dict[str, Any], required: dict[str, tuple[type, ...]], optional: dict[str, tuple[type, ...]]
) -> dict[str, Any]:
    """The known fields of ``body``, type-checked: a missing required field or a wrong type raises.

    An optional field may be absent or null; unknown fields are ignored (adding a field is
    compatible, changing a field's meaning needs a new ``v``). bool is refused where a number is
    expected, because JSON ``true`` parses to a Python int subclass.
    """
    kwargs: dict[str, Any] = {}
    for name, types in (*required.items(), *optional.items()):
        if name not in body or (name in optional and body[name] is None):
            if name in required:
                raise EventSchemaError(f"missing field {name!r}")
            continue
        value = body[name]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            raise EventSchemaError(f"field {name!r} has type {type(value).__name__}")
        kwargs[name] = value
    return kwargs


# The one description of the wire fields, in wire order (the dataclass below must have exactly
# these, and ``schema_version`` as ``v``): field name -> accepted types; bool is excluded from
# ints by typed_fields. Read by ``from_dict`` (checked) and ``to_dict`` (written).
_REQUIRED: dict[str, tuple[type, ...]] = {
    "event_id": (str,),
    "principal": (str,),
    "tool": (str,),
    "status": (str,),
    "started_at": (str,),
    "finished_at": (str,),
    "request_bytes": (int,),
    "response_bytes": (int,),
    "duration_ms": (int, float),
}
_OPTIONAL: dict[str, tuple[type, ...]] = {
    "session_id": (str,),
    "tenant": (str,),
    "error_code": (str,),
    "first_byte_ms": (int, float),
    "emitted_at": (str,),
    # W3C trace context of the request that made the call (protocol.trace_context): added to
    # version 1 as optional fields, so every reader of v1 still reads every event.
    "trace_id": (str,),
    "span_id": (str,),
    # True when the call's commit wrote its tool-call record (with this event on it): ingest then
    # writes no record, and counts the event under a dedupe marker the outbox relay checks. Absent
    # (every event of an earlier release) means ingest records the call itself, as before.
    "recorded": (bool,),
}


@dataclass(slots=True)
class ToolCallEvent:
    """One completed tools/call.

    ``event_id`` is the MCP tool call id (D4), so the stream, the session store and the ingest
    dedupe marker all name the same call. ``started_at`` is byte-for-byte the timestamp the
    session store puts in the record's sort key ``tool#<started_at>#<event_id>``.

    A value, though not a frozen dataclass: one is built on every tools/call (``call_event``), and
    a frozen ``__init__`` (an ``object.__setattr__`` per field) cost three times as much.
    """

    event_id: str
    principal: str
    tool: str
    status: str
    started_at: str
    finished_at: str
    request_bytes: int
    response_bytes: int
    duration_ms: float
    session_id: str | None = None
    tenant: str | None = None
    error_code: str | None = None
    first_byte_ms: float | None = None
    emitted_at: str = field(default_factory=utc_now_iso)
    trace_id: str | None = None
    """The trace of the request that made the call: what ties the endpoint's log lines, this
    event, its records and their audit records together."""
    span_id: str | None = None
    """The span of that request (the endpoint's, or the task worker's run)."""
    recorded: bool | None = None
    """True: the commit wrote the call's record (ingest writes none, and dedupes the event by its id)."""
    schema_version: int = SCHEMA_VERSION

    def validate(self) -> None:
        """Raises EventSchemaError unless every field is valid: run on every event read from the
        stream (:meth:`from_dict`). The endpoint builds its events from typed values
        (:func:`mcp_platform.application.invocation.call_event`) and does not re-check them per call."""
        for name in ("event_id", "principal", "tool"):
            if not getattr(self, name):
                raise EventSchemaError(f"{name} must be a non-empty string")
        if self.session_id == "":
            raise EventSchemaError("session_id must be omitted (None) rather than empty")
        if self.tenant is not None and not is_tenant(self.tenant):
            raise EventSchemaError(f"tenant must be {TENANT_SYNTAX}")
        if self.status not in STATUSES:
            raise EventSchemaError(f"status must be one of {STATUSES}, got {self.status!r}")
        for name in ("request_bytes", "response_bytes", "duration_ms"):
            if getattr(self, name) < 0:
                raise EventSchemaError(f"{name} must be >= 0")
        if parse_iso8601(self.finished_at, "finished_at") < parse_iso8601(self.started_at, "started_at"):
            raise EventSchemaError("finished_at is before started_at")
        parse_iso8601(self.emitted_at, "emitted_at")
        if self.trace_id is not None and not is_trace_id(self.trace_id):
            raise EventSchemaError("trace_id must be 32 lower-case hex digits, not all zeros")
        if self.span_id is not None and not is_span_id(self.span_id):
            raise EventSchemaError("span_id must be 16 lower-case hex digits, not all zeros")
        if not 1 <= self.schema_version <= SCHEMA_VERSION:
            raise EventSchemaError(f"unsupported schema version {self.schema_version}")

    @property
    def started_date(self) -> str:
        """UTC calendar day of the call (usage counters are per principal/day/tool)."""
        return parse_iso8601(self.started_at, "started_at").astimezone(UTC).date().isoformat()

    def to_dict(self) -> dict[str, Any]:
        """The wire form: the one writer of a tool-call event (the endpoint's events too, through
        :func:`mcp_platform.application.invocation.call_event`). Its fields are those of
        ``_REQUIRED`` and ``_OPTIONAL``, the optional ones only when set, then ``v``."""
        body: dict[str, Any] = {name: getattr(self, name) for name in _REQUIRED}
        for name in _OPTIONAL:
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        body["v"] = self.schema_version
        return body

    def to_bytes(self) -> bytes:
        return compact_json.dumps(self.to_dict())

    @classmethod
    def from_bytes(cls, data: bytes) -> ToolCallEvent:
        return cls.from_dict(load_object(data))

    @classmethod
    def from_dict(cls, body: Any) -> ToolCallEvent:
        if not isinstance(body, dict):
            raise EventSchemaError("event must be a JSON object")
        event_type = body.get(TYPE_FIELD, TOOL_CALL_TYPE)
        if event_type != TOOL_CALL_TYPE:
            # Another event type that happens to carry tool-call fields is still not a tool call.
            raise EventSchemaError(f"not a tool-call event: type {event_type!r}")
        version = schema_version(body, SCHEMA_VERSION)
        event = cls(schema_version=version, **typed_fields(body, _REQUIRED, _OPTIONAL))
        event.validate()
        return event
