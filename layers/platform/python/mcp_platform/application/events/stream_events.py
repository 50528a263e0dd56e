"""Every event type the tool-event Kinesis stream carries, and the dispatch by ``type``.

- ``tool.call`` (:class:`~mcp_platform.application.events.schema.ToolCallEvent`): the endpoint's, one per
  tools/call. Its records have no ``type`` field: that is how every one of them was ever written,
  and the stream retains records for up to a year (K7), so absent means tool call, for good.
- ``session.expired`` (:class:`SessionExpiredEvent`): the audit function's, one per session
  removed by TTL (A4), carrying the session summary.

Each type has its own ``v`` and validates strictly. An unknown type is refused, as a newer
version is: a producer deployed ahead of its consumers must not be half-understood. So a record
is either a known event or poison (A5, a batch item failure); nothing is skipped silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from mcp_platform.application.events.schema import (
    TOOL_CALL_TYPE,
    TYPE_FIELD,
    EventSchemaError,
    ToolCallEvent,
    load_object,
    parse_iso8601,
    schema_version,
    typed_fields,
)

SESSION_EXPIRED_TYPE = "session.expired"
SESSION_EXPIRED_VERSION = 1

_EXPIRED_REQUIRED: dict[str, tuple[type, ...]] = {
    "session_id": (str,),
    "sequence_number": (str,),  # of the DynamoDB Streams REMOVE record that reported it
    "removed_at": (str,),
}
_EXPIRED_OPTIONAL: dict[str, tuple[type, ...]] = {
    "owner": (str,),
    "tenant": (str,),
    "kind": (str,),
    "tool_calls": (int,),
    "created_at": (str,),
    "expired_at": (str,),
    "duration_seconds": (int,),
    "last_activity": (str,),
    "final_version": (int,),
}
_EXPIRED_TIMES = ("removed_at", "created_at", "expired_at", "last_activity")


@dataclass(frozen=True)
class SessionExpiredEvent:
    """A session's metadata item was removed by DynamoDB's TTL process (A4), with its summary."""

    event_type: ClassVar[str] = SESSION_EXPIRED_TYPE

    session_id: str
    sequence_number: str
    removed_at: str
    owner: str | None = None
    tenant: str | None = None
    kind: str | None = None
    tool_calls: int = 0
    created_at: str | None = None
    expired_at: str | None = None
    duration_seconds: int | None = None
    last_activity: str | None = None
    final_version: int | None = None
    schema_version: int = SESSION_EXPIRED_VERSION

    def __post_init__(self) -> None:
        if not self.session_id:
            raise EventSchemaError("session_id must be a non-empty string")
        if not self.sequence_number.isdigit():
            raise EventSchemaError(f"sequence_number is not a stream sequence number: {self.sequence_number!r}")
        if self.tool_calls < 0:
            raise EventSchemaError("tool_calls must be >= 0")
        for name in _EXPIRED_TIMES:
            value = getattr(self, name)
            if value is not None:
                parse_iso8601(value, name)
        if not 1 <= self.schema_version <= SESSION_EXPIRED_VERSION:
            raise EventSchemaError(f"unsupported {SESSION_EXPIRED_TYPE} version {self.schema_version}")

    @property
    def event_id(self) -> str:
        """Deterministic, so a consumer can drop the rare duplicate publication (A4)."""
        return f"{SESSION_EXPIRED_TYPE}#{self.session_id}"

    @classmethod
    def from_summary(cls, summary: Mapping[str, Any]) -> SessionExpiredEvent:
        """The event for a session summary as the audit writer stores it (extra keys ignored)."""
        return cls(**typed_fields(dict(summary), _EXPIRED_REQUIRED, _EXPIRED_OPTIONAL))

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {TYPE_FIELD: SESSION_EXPIRED_TYPE, "v": self.schema_version, "event_id": self.event_id}
        for name in (*_EXPIRED_REQUIRED, *_EXPIRED_OPTIONAL):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        return body

    @classmethod
    def from_dict(cls, body: dict[str, Any]) -> SessionExpiredEvent:
        if body.get(TYPE_FIELD) != SESSION_EXPIRED_TYPE:
            raise EventSchemaError(f"not a {SESSION_EXPIRED_TYPE} event: type {body.get(TYPE_FIELD)!r}")
        version = schema_version(body, SESSION_EXPIRED_VERSION)
        event = cls(schema_version=version, **typed_fields(body, _EXPIRED_REQUIRED, _EXPIRED_OPTIONAL))
        if body.get("event_id") != event.event_id:
            raise EventSchemaError(f"event_id {body.get('event_id')!r} does not name session {event.session_id!r}")
        return event


StreamEvent = ToolCallEvent | SessionExpiredEvent


def decode_stream_event(data: bytes) -> StreamEvent:
    """One Kinesis record's data as the event it is, or EventSchemaError (a poison record)."""
    body = load_object(data)
    event_type = body.get(TYPE_FIELD, TOOL_CALL_TYPE)
    if event_type == TOOL_CALL_TYPE:
        return ToolCallEvent.from_dict(body)
    if event_type == SESSION_EXPIRED_TYPE:
        return SessionExpiredEvent.from_dict(body)
    raise EventSchemaError(f"unknown event type {event_type!r}")
