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

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.audit_writer import AuditWriter
from mcp_platform.application.audit.diff import image_to_plain
from mcp_platform.application.audit.records import StreamChange
from mcp_platform.application.events.stream_events import SESSION_EXPIRED_TYPE, SessionExpiredEvent
from mcp_platform.protocol.clock import SYSTEM_CLOCK, Clock, iso_utc

HELD_PREFIXES = (ts.TOOL_RECORD_PREFIX, ts.TOOL_CALL_MARKER_PREFIX)
EVENT_TYPE = SESSION_EXPIRED_TYPE
BATCH_DELETE_MAX = 25  # BatchWriteItem limit
DELETE_ATTEMPTS = 5


class EventPublisher(Protocol):
    """Where "session expired" events go; must raise if the event could not be delivered."""

    def publish(self, event: Mapping[str, Any]) -> None: ...


class CleanupIncomplete(RuntimeError):
    """Some held items stayed unprocessed after every retry; the record must be redelivered."""


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


def build_summary(change: StreamChange, held_sks: list[str]) -> dict[str, Any]:
    """Tool calls, duration created -> expired and last activity, from the removed metadata."""
    metadata = image_to_plain(change.old_image)
    created = _epoch(metadata.get(ts.CREATED_AT))
    expired = _epoch(metadata.get(ts.TTL))
    activity = [_epoch(metadata.get(ts.UPDATED_AT)), created]
    tool_sks = [sk for sk in held_sks if sk.startswith(ts.TOOL_RECORD_PREFIX)]
    # tool#<ISO8601>#<toolCallId>: the start time of each call is in its key (no item read).
    activity += [_epoch(sk[len(ts.TOOL_RECORD_PREFIX) :].split("#", 1)[0]) for sk in tool_sks]
    known = [moment for moment in activity if moment is not None]
    owner = metadata.get(ts.OWNER)
    return {
        "session_id": change.session_id,
        "owner": str(owner) if owner is not None else None,
        "kind": str(metadata.get(ts.KIND, ts.KIND_APPLICATION)),
        "tool_calls": len(tool_sks),
        "created_at": _iso(created),
        "expired_at": _iso(expired),
        "removed_at": _iso(change.change_epoch),
        "duration_seconds": int(expired - created) if created is not None and expired is not None else None,
        "last_activity": _iso(max(known)) if known else None,
        "final_version": int(metadata[ts.VERSION]) if ts.VERSION in metadata else None,
        "sequence_number": change.sequence_number,
    }


def expiry_event(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The ``session.expired`` event for a stored summary; EventSchemaError if it is not valid."""
    return SessionExpiredEvent.from_summary(summary).to_dict()


class SessionExpiryHandler:
    """Revokes what an expired session held, writes its summary and emits the expiry event."""

    def __init__(
        self,
        dynamodb: Any,
        session_table: str,
        writer: AuditWriter,
        publisher: EventPublisher,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._dynamodb = dynamodb
        self._table = session_table
        self._writer = writer
        self._publisher = publisher
        self._sleep = sleep
        self._clock = clock

    def handle(self, change: StreamChange) -> ExpiryOutcome:
        session_id = change.session_id
        if session_id is None or not change.is_session_expiry:
            raise ValueError("not a session TTL expiry")
        held = list(self._held_sks(change.pk))
        summary = build_summary(change, held)
        stored, written = self._writer.put_summary(session_id, summary, change.change_epoch)
        deleted = self._delete(change.pk, held)
        published = False
        if not stored["event_published"]:
            self._publisher.publish(expiry_event(stored))
            self._writer.mark_event_published(session_id, _iso(self._clock.now()) or "")
            published = True
        return ExpiryOutcome(session_id, stored, written, deleted, published)

    def _held_sks(self, pk: str) -> Iterator[str]:
        # ConsistentRead (X4): what is left to revoke must not come from a stale view.
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": ts.PK, "#sk": ts.SK},
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "ProjectionExpression": "#pk, #sk",
            "ConsistentRead": True,
        }
        while True:
            page = self._dynamodb.query(**request)
            for item in page.get("Items", []):
                sk = item[ts.SK]["S"]
                if sk.startswith(HELD_PREFIXES):
                    yield sk
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _delete(self, pk: str, sks: list[str]) -> int:
        for start in range(0, len(sks), BATCH_DELETE_MAX):
            chunk = sks[start : start + BATCH_DELETE_MAX]
            requests: Mapping[str, Any] = {
                self._table: [{"DeleteRequest": {"Key": {ts.PK: {"S": pk}, ts.SK: {"S": sk}}}} for sk in chunk]
            }
            for attempt in range(DELETE_ATTEMPTS):
                if attempt:
                    self._sleep(0.05 * 2 ** (attempt - 1))  # throttled: back off before resending
                requests = self._dynamodb.batch_write_item(RequestItems=requests).get("UnprocessedItems") or {}
                if not requests:
                    break
            else:
                left = sum(len(v) for v in requests.values())
                raise CleanupIncomplete(f"{left} held items of {pk} still unprocessed")
        return len(sks)
