"""What the ingest needs of storage: the tool-call record and the usage counters, each exactly once.

Implemented by :class:`mcp_platform.adapters.dynamodb.ingest_ledger.DynamoIngestLedger` (the item
layout, the transactions and their cancellation reasons are its business), injected by the
composition root. Both writes must be idempotent: redelivery is the normal case, not the rare one.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from mcp_platform.application.events.schema import ToolCallEvent


class RecordWrite(enum.Enum):
    """What became of a tool-call record write."""

    WRITTEN = "written"
    ALREADY_RECORDED = "already_recorded"  # the endpoint's commit or an earlier delivery wrote it (D4)
    SESSION_GONE = "session_gone"  # the session expired, ended or was deleted: nothing written


class CountingFailed(Exception):
    """The usage of the records from ``first_unapplied`` (a sequence number) on was not applied;
    every record before it was, and the shard's checkpoint says so."""

    def __init__(self, first_unapplied: str) -> None:
        super().__init__(f"usage not applied from record {first_unapplied}")
        self.first_unapplied = first_unapplied


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

    def checkpoint(self, shard: str) -> str | None:
        """The sequence number of the shard's last record whose usage was applied (a consistent read)."""
        ...

    def apply_usage(
        self,
        shard: str,
        entries: Sequence[tuple[str, ToolCallEvent | None]],
        *,
        expected: str | None,
        marker_expires_at: int,
    ) -> set[str]:
        """Apply the usage of ``entries`` ((sequence number, event or None), in stream order, all
        after ``expected``, the checkpoint as read) and move the checkpoint to the last of them,
        all or nothing per write: one write per usage counter, not per event. A recorded event
        (its commit wrote the record) is counted under its dedupe marker too, and not at all when
        the marker exists (another copy was counted). Returns the ids counted. Raises
        CountingFailed naming the first record not applied (the records before it were)."""
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
