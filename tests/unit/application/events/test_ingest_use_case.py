"""The ingest use case against an in-memory IngestLedger: the order and idempotency rules alone."""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_platform.application.events.ingest import EventIngestor
from mcp_platform.application.events.ports import RecordWrite
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.protocol.clock import ManualClock

T0 = 1_795_000_000.0


def tool_call(call_id: str = "c1", session_id: str | None = "s1") -> ToolCallEvent:
    return ToolCallEvent(
        event_id=call_id,
        principal="alice",
        tool="echo",
        status="ok",
        started_at="2026-11-18T10:00:00.000000Z",
        finished_at="2026-11-18T10:00:00.100000Z",
        request_bytes=10,
        response_bytes=20,
        duration_ms=100.0,
        session_id=session_id,
    )


@dataclass
class MemoryLedger:
    """Records once per event id, counts once per event id, like the conditional writes do."""

    live_sessions: set[str] = field(default_factory=set)
    records: dict[str, str] = field(default_factory=dict)
    counted: dict[str, int] = field(default_factory=dict)  # event id -> marker_expires_at
    calls: list[str] = field(default_factory=list)

    def record_tool_call(self, event: ToolCallEvent, *, now: float) -> RecordWrite:
        self.calls.append("record")
        if event.session_id not in self.live_sessions:
            return RecordWrite.SESSION_GONE
        if event.event_id in self.records:
            return RecordWrite.ALREADY_RECORDED
        self.records[event.event_id] = event.session_id or ""
        return RecordWrite.WRITTEN

    def count_once(self, event: ToolCallEvent, *, marker_expires_at: int) -> bool:
        self.calls.append("count")
        if event.event_id in self.counted:
            return False
        self.counted[event.event_id] = marker_expires_at
        return True


def test_record_then_count_and_a_redelivery_changes_nothing() -> None:
    # Given a live session
    ledger = MemoryLedger(live_sessions={"s1"})
    ingestor = EventIngestor(ledger, dedupe_ttl_s=3600, clock=ManualClock(T0 + 0.9))
    # When one event is ingested twice (a redelivery)
    first = ingestor.ingest(tool_call())
    again = ingestor.ingest(tool_call())
    # Then the record is written before the count, both once; the marker outlives the retention
    assert ledger.calls == ["record", "count", "record", "count"]
    assert (first.record_written, first.counted) == (True, True)
    assert (again.record_written, again.counted, again.session_gone) == (False, False, False)
    assert ledger.counted == {"c1": int(T0) + 3600}


def test_a_gone_session_skips_the_record_but_still_counts_usage() -> None:
    # Given no live session
    ledger = MemoryLedger()
    # When its late event is ingested
    outcome = EventIngestor(ledger, clock=ManualClock(T0)).ingest(tool_call())
    # Then no record, the usage is counted, and the outcome says why
    assert ledger.records == {}
    assert (outcome.record_written, outcome.counted, outcome.session_gone) == (False, True, True)


def test_an_event_without_a_session_is_only_counted() -> None:
    ledger = MemoryLedger(live_sessions={"s1"})
    outcome = EventIngestor(ledger, clock=ManualClock(T0)).ingest(tool_call(session_id=None))
    assert ledger.calls == ["count"]
    assert (outcome.record_written, outcome.counted, outcome.session_gone) == (False, True, False)
