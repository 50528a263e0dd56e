"""The emulated TTL sweeper keeps its share of the emulator's time bounded on a large table.

A sweep is a Scan of the whole table, which the emulator serves at a cost that grows with the
table; the sweeper therefore waits at least SWEEP_SHARE_FACTOR times as long as its last sweep
took before the next one (its interval is only the shortest wait).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from local.ttl import SWEEP_SHARE_FACTOR, TtlDeletions, TtlSweeper

SCAN_S = 0.05


class SlowTable:
    """A Scan that takes SCAN_S and finds nothing due."""

    def __init__(self) -> None:
        self.scans: list[float] = []

    def scan(self, **_request: Any) -> dict[str, Any]:
        self.scans.append(time.monotonic())
        time.sleep(SCAN_S)
        return {"Items": []}


def test_a_slow_sweep_stretches_the_wait_before_the_next() -> None:
    table, stop = SlowTable(), threading.Event()
    sweeper = TtlSweeper(table, "sessions", "ttl", ("pk", "sk"), TtlDeletions(), interval_s=0.01, stop=stop)
    sweeper.start()
    time.sleep(SCAN_S * SWEEP_SHARE_FACTOR * 1.2)
    stop.set()
    sweeper.join(timeout=2)
    # Every 0.01 s (the interval) would have been about ten sweeps in this time.
    assert 1 <= len(table.scans) <= 2
    if len(table.scans) == 2:
        assert table.scans[1] - table.scans[0] >= SCAN_S * SWEEP_SHARE_FACTOR
