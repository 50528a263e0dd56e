"""What the ingest needs of storage: the tool-call record and the usage counters, each exactly once.

Implemented by :class:`mcp_platform.adapters.dynamodb.ingest_ledger.DynamoIngestLedger` (the item
layout, the transactions and their cancellation reasons are its business), injected by the
composition root. Both writes must be idempotent: redelivery is the normal case, not the rare one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from mcp_platform.application.events.schema import ToolCallEvent


class RecordWrite(enum.Enum):
    """What became of a tool-call record write."""

    WRITTEN = "written"
    ALREADY_RECORDED = "already_recorded"  # the endpoint's commit or an earlier delivery wrote it (D4)
    SESSION_GONE = "session_gone"  # the session expired, ended or was deleted: nothing written


class IngestLedger(Protocol):
    def record_tool_call(self, event: ToolCallEvent, *, now: float) -> RecordWrite:
        """Write the event's immutable tool-call record under its session, only while the session
        is alive at ``now`` (epoch seconds) and only if the call is not recorded yet."""
        ...

    def count_once(self, event: ToolCallEvent, *, marker_expires_at: int) -> bool:
        """Add the event to its principal's usage counters unless it was counted before: True
        when counted, False for a duplicate. The dedupe marker that decides it lives until
        ``marker_expires_at`` (epoch seconds)."""
        ...


@dataclass(frozen=True)
class RecentEvents:
    """A session's newest tool-call events, oldest first."""

    events: list[ToolCallEvent]
    truncated: bool
    """More may exist: the count or the time bound was reached."""
    skipped_invalid: int


class RecentToolEvents(Protocol):
    """A session's recent tool-call events read back from the stream (K4), for tools; the
    Kinesis adapter reads only the shards that hold the session's partition key."""

    def session_events(self, session_id: str, *, lookback: timedelta, max_events: int) -> RecentEvents: ...


class EventSink(Protocol):
    """Where a finished call's event goes (the Kinesis producer): buffered, and on the stream
    before the response's last byte (the transport's flush)."""

    def emit(self, event: ToolCallEvent) -> None: ...
