"""The local platform's health line, request counter and stream trimming (local/health.py)."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from local.health import HealthReporter, PipelineBacklog, RequestCounter, resident_mb
from mcp_platform.ops.lambda_records import SourceKind


@dataclass
class FakeSource:
    kind: SourceKind
    stream_name: str


@dataclass
class FakePoller:
    name: str
    source: FakeSource
    handled: dict[str, str] = field(default_factory=dict)

    def checkpoints(self) -> dict[str, str]:
        return dict(self.handled)


@dataclass
class FakeEmulator:
    trims: list[tuple[str, int, float]] = field(default_factory=list)

    def pending(self, kind: SourceKind, stream_name: str, checkpoints: dict[str, str]) -> int:
        return 7 if kind is SourceKind.KINESIS else 130 - int(checkpoints.get("s", "0"))

    def stream_records(self, table_name: str) -> int:
        return 42

    def trim_stream(self, table_name: str, through: int, older_than_s: float) -> int:
        self.trims.append((table_name, through, older_than_s))
        return 1


def test_resident_memory_is_read_from_proc() -> None:
    assert 10 < resident_mb() < 100_000
    assert resident_mb(2**22 + 12345) == 0.0  # no such process


def test_the_counter_counts_requests_to_the_mcp_path_only() -> None:
    seen: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    counter = RequestCounter(app)

    async def calls() -> None:
        for scope in ({"type": "lifespan"}, {"type": "http", "path": "/mcp"}, {"type": "http", "path": "/healthz"}):
            await counter(scope, None, None)

    anyio.run(calls)
    assert counter.count == 1
    assert seen == ["lifespan", "http", "http"]  # everything reaches the app


def test_trimming_goes_only_as_far_as_every_poller_of_the_stream_has_handled() -> None:
    emulator = FakeEmulator()
    audit = FakePoller("audit", FakeSource(SourceKind.DYNAMODB, "sessions"), {"s": "120"})
    other = FakePoller("other", FakeSource(SourceKind.DYNAMODB, "sessions"))
    ingest = FakePoller("ingest", FakeSource(SourceKind.KINESIS, "events"), {"k": "9"})
    backlog = PipelineBacklog(emulator, [audit, other, ingest], retention_s=600)  # type: ignore[arg-type]
    assert backlog.trim() == 0  # "other" has handled nothing yet
    other.handled = {"s": "110"}
    assert backlog.trim() == 1
    assert emulator.trims == [("sessions", 110, 600)]  # never Kinesis: moto's Kinesis is not trimmed
    assert backlog.lag() == {"audit": 10, "other": 20, "ingest": 7}
    assert backlog.held() == 42


def test_the_health_line_reports_requests_lag_records_and_memory() -> None:
    counter = RequestCounter(None)
    poller = FakePoller("audit", FakeSource(SourceKind.DYNAMODB, "sessions"), {"s": "97"})
    now = [1000.0]
    reporter = HealthReporter([counter], PipelineBacklog(FakeEmulator(), [poller], 600), 300, threading.Event(),
                              clock=lambda: now[0])  # type: ignore[arg-type]  # fmt: skip
    counter.count, now[0] = 25, 1060.0
    line = reporter.line()
    assert line.startswith(
        "health: 25 MCP requests served (+25 in 60 s); pipeline lag (records not yet handled): audit 33;"
    )
    assert "stream records held 42; RSS " in line
    counter.count = 30
    assert "30 MCP requests served (+5 in 0 s)" in reporter.line()
    attached = HealthReporter([counter], None, 300, threading.Event())
    assert "pipeline" not in attached.line()


def test_a_request_logs_a_line_at_once_and_a_stop_ends_the_thread(caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    reporter = HealthReporter([RequestCounter(None)], None, 0, stop)  # 0: only on request
    with caplog.at_level(logging.INFO, logger="local.health"):
        reporter.start()
        reporter.request()
        deadline = time.monotonic() + 3
        while not any("health: 0 MCP requests" in r.message for r in caplog.records):
            assert time.monotonic() < deadline, "no health line after request()"
            time.sleep(0.05)
    stop.set()
    reporter.join(timeout=2)
    assert not reporter._thread.is_alive()
