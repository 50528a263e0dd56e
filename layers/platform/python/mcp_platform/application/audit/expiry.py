"""Side effects of a session expiring by TTL (A4), each one safe to run again on redelivery.

Order matters for idempotency: the summary is computed and written (first write wins) *before*
anything is deleted, so a redelivery after a partial cleanup still reports the original counts;
deletes of already-deleted items are no-ops; the event is published only while the stored
summary says it is still owed, and carries a deterministic id so a consumer can drop the rare
duplicate (published, then failed before the summary was marked).

The event is a typed, versioned ``session.expired`` record (:mod:`mcp_platform.application.events.stream_events`):
it shares the tool-event stream, and the ingest function recognises it there instead of taking it
for a malformed tool call. It is validated here, before it is published, so a bad summary fails
this stream record (retried, then the audit DLQ) rather than reaching the event stream as poison.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from mcp_platform.application.audit.ports import (
    AuditLog,
    CleanupIncomplete,
    EventPublisher,
    SessionRemains,
)
from mcp_platform.application.audit.records import StreamChange
from mcp_platform.application.auth.tenants import tenant_of
from mcp_platform.application.events.stream_events import SESSION_EXPIRED_TYPE, SessionExpiredEvent
from mcp_platform.protocol.clock import SYSTEM_CLOCK, Clock, iso_utc

__all__ = [
    "CleanupIncomplete",
    "EventPublisher",
    "ExpiryOutcome",
    "SessionExpiryHandler",
    "build_summary",
    "expiry_event",
]

EVENT_TYPE = SESSION_EXPIRED_TYPE


@dataclass(frozen=True, slots=True)
class ExpiryOutcome:
    session_id: str
    summary: Mapping[str, Any]
    summary_written: bool  # False: a previous delivery wrote it
    deleted: int  # held items deleted by this delivery (0 on a complete redelivery)
    event_published: bool  # False: a previous delivery already published it


def _epoch(value: Any) -> float | None:
    """created_at / updated_at as epoch seconds, whether stored as a number or ISO 8601 text."""
    if isinstance(value, int | float | Decimal):
        return float(value)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    return None


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return iso_utc(epoch, "auto")


def build_summary(change: StreamChange, tool_call_starts: Sequence[str]) -> dict[str, Any]:
    """Tool calls, duration created -> expired and last activity, from the removed metadata and
    the start times of the session's recorded tool calls."""
    if change.expired is None:
        raise ValueError("not a session TTL expiry")
    metadata = change.expired
    created = _epoch(metadata.created_at)
    expired = _epoch(metadata.expires_at)
    activity = [_epoch(metadata.updated_at), created]
    activity += [_epoch(started) for started in tool_call_starts]
    known = [moment for moment in activity if moment is not None]
    return {
        "session_id": change.session_id,
        "owner": metadata.owner,
        "tenant": tenant_of(metadata.owner) if metadata.owner is not None else None,
        "kind": metadata.kind,
        "tool_calls": len(tool_call_starts),
        "created_at": _iso(created),
        "expired_at": _iso(expired),
        "removed_at": _iso(change.change_epoch),
        "duration_seconds": int(expired - created) if created is not None and expired is not None else None,
        "last_activity": _iso(max(known)) if known else None,
        "final_version": metadata.version,
        "sequence_number": change.sequence_number,
    }


def expiry_event(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The ``session.expired`` event for a stored summary; EventSchemaError if it is not valid."""
    return SessionExpiredEvent.from_summary(summary).to_dict()


class SessionExpiryHandler:
    """Revokes what an expired session held, writes its summary and emits the expiry event."""

    def __init__(
        self,
        remains: SessionRemains,
        writer: AuditLog,
        publisher: EventPublisher,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._remains = remains
        self._writer = writer
        self._publisher = publisher
        self._clock = clock

    def handle(self, change: StreamChange) -> ExpiryOutcome:
        session_id = change.session_id
        if session_id is None or not change.is_session_expiry:
            raise ValueError("not a session TTL expiry")
        held = self._remains.held(session_id)
        summary = build_summary(change, held.tool_call_starts)
        stored, written = self._writer.put_summary(session_id, summary, change.change_epoch)
        deleted = self._remains.delete(session_id, held.keys)
        published = False
        if not stored["event_published"]:
            self._publisher.publish(expiry_event(stored))
            self._writer.mark_event_published(session_id, _iso(self._clock.now()) or "")
            published = True
        return ExpiryOutcome(session_id, stored, written, deleted, published)
