"""The local platform's own health: requests served, pipeline lag, resident memory.

`make dev` logs one ``health:`` line every LOCAL_HEALTH_SECONDS (and at once on SIGUSR1), so
a user sees a pipeline falling behind or memory growing long before the kernel's OOM killer
does. The same thread trims the table streams: moto keeps every stream record forever, and a
record that every poller of its stream has consumed, older than LOCAL_STREAM_RETENTION_SECONDS,
is of no further use (AWS keeps 24 h; locally memory is the tighter bound).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from local.worker import BackgroundWorker
from mcp_platform.ops.lambda_records import SourceKind

if TYPE_CHECKING:  # only for annotations: importing them would import moto and boto3
    from local.emulator import Emulator
    from local.pollers import StreamPoller

logger = logging.getLogger("local.health")
UPKEEP_INTERVAL_S = 10.0  # how often consumed stream records are trimmed
_SERVED = re.compile(r"health: (\d+) MCP requests served")
_LAG = re.compile(r"pipeline lag \(records not yet handled\): ([^;]*);")


def resident_mb(pid: int | str = "self") -> float:
    """VmRSS of a process in MB (0 once it has exited)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except FileNotFoundError:
        return 0.0
    raise RuntimeError(f"/proc/{pid}/status has no VmRSS line")


def parse_line(line: str) -> tuple[int, dict[str, int]]:
    """(requests served, records not yet handled per poller) of a health line; ValueError if it is none."""
    served, lag = _SERVED.search(line), _LAG.search(line)
    if served is None:
        raise ValueError(f"not a health line: {line!r}")
    lags = dict(re.findall(r"(\S+) (\d+)", lag.group(1))) if lag else {}
    return int(served.group(1)), {name: int(n) for name, n in lags.items()}


class RequestCounter:
    """ASGI middleware counting the requests to the MCP endpoint (every method, every status)."""

    def __init__(self, app: Any, path: str = "/mcp") -> None:
        self.app, self.path = app, path
        self.count = 0  # only the event loop's thread increments it

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path") == self.path:
            self.count += 1
        await self.app(scope, receive, send)


class Backlog(Protocol):
    """What the health line needs from the emulator and the pollers (see local.platform)."""

    def lag(self) -> dict[str, int]: ...  # poller name -> records not handled yet

    def held(self) -> int: ...  # stream records the emulator still holds

    def trim(self) -> int: ...  # drops consumed records past retention; how many


class PipelineBacklog:
    """The pollers' backlog, read from their checkpoints and the emulator's streams, and the
    trimming of table-stream records every poller of the stream has handled."""

    def __init__(self, emulator: Emulator, pollers: Sequence[StreamPoller], retention_s: float) -> None:
        self._emulator, self._pollers, self._retention_s = emulator, pollers, retention_s
        self._tables: dict[str, list[StreamPoller]] = {}
        for poller in pollers:
            if poller.source.kind is SourceKind.DYNAMODB:
                self._tables.setdefault(poller.source.stream_name, []).append(poller)

    def lag(self) -> dict[str, int]:
        return {
            p.name: self._emulator.pending(p.source.kind, p.source.stream_name, p.checkpoints()) for p in self._pollers
        }

    def held(self) -> int:
        return sum(self._emulator.stream_records(table) for table in self._tables)

    def trim(self) -> int:
        dropped = 0
        for table, pollers in self._tables.items():
            handled = [p.checkpoints() for p in pollers]
            shards = set().union(*handled)
            # A table stream has one shard in the emulator; trim each only up to what all have handled.
            for shard in shards:
                if all(shard in h for h in handled):
                    through = min(int(h[shard]) for h in handled)
                    dropped += self._emulator.trim_stream(table, through, self._retention_s)
        return dropped


class HealthReporter(BackgroundWorker):
    """A thread: trims every UPKEEP_INTERVAL_S, logs a health line every ``interval_s`` (0 = only
    on request) and whenever :meth:`request` is called (the SIGUSR1 handler does)."""

    def __init__(
        self,
        counters: Sequence[RequestCounter],
        backlog: Backlog | None,
        interval_s: float,
        stop: threading.Event,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._counters, self._backlog, self._interval, self._stop = counters, backlog, interval_s, stop
        self._clock = clock
        self._requested = threading.Event()
        self._last_count, self._last_at = 0, clock()
        super().__init__("health")

    def request(self) -> None:
        """Safe from a signal handler: only sets an event."""
        self._requested.set()

    def line(self) -> str:
        count, now = sum(c.count for c in self._counters), self._clock()
        served = f"{count} MCP requests served (+{count - self._last_count} in {now - self._last_at:.0f} s)"
        self._last_count, self._last_at = count, now
        parts = [served]
        if self._backlog is not None:
            lag = ", ".join(f"{name} {n}" for name, n in sorted(self._backlog.lag().items()))
            parts.append(f"pipeline lag (records not yet handled): {lag or 'no pollers'}")
            parts.append(f"stream records held {self._backlog.held()}")
        parts.append(f"RSS {resident_mb():.0f} MB")
        return "health: " + "; ".join(parts)

    def _run(self) -> None:
        next_trim = self._clock()
        next_report = self._clock() + self._interval if self._interval > 0 else float("inf")
        while not self._stop.is_set():
            now = self._clock()
            try:
                if self._backlog is not None and now >= next_trim:
                    next_trim = now + UPKEEP_INTERVAL_S
                    self._backlog.trim()
                if self._requested.is_set() or now >= next_report:
                    self._requested.clear()
                    next_report = now + self._interval if self._interval > 0 else float("inf")
                    logger.info(self.line())
            except Exception:
                if self._stop.is_set():
                    break  # the emulator is going down with us
                logger.exception("health/upkeep pass failed; retrying at the next interval")
            self._requested.wait(0.5)  # short: a stop is noticed within half a second
