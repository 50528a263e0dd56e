"""Per-shard call spacing for GetRecords (K4: at most 5 calls per second per shard)."""

from __future__ import annotations

import time
from collections.abc import Callable

GET_RECORDS_PER_SECOND = 5


class ShardRateLimiter:
    """Spaces calls on one key at least ``1/rate`` seconds apart.

    Spacing (rather than a 5-token bucket) also keeps bursts off the shard, whose quota is
    shared with every other standard consumer. Clock and sleep are injectable for tests.
    """

    def __init__(
        self,
        rate_per_s: float = GET_RECORDS_PER_SECOND,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate_per_s <= 0:
            raise ValueError("rate_per_s must be > 0")
        self._interval = 1.0 / rate_per_s
        self._monotonic = monotonic
        self._sleep = sleep
        self._last: dict[str, float] = {}

    def acquire(self, key: str) -> float:
        """Blocks until a call on ``key`` is allowed; returns the time slept."""
        now = self._monotonic()
        last = self._last.get(key)
        waited = 0.0
        if last is not None and now - last < self._interval:
            waited = self._interval - (now - last)
            self._sleep(waited)
            now = self._monotonic()
        self._last[key] = now
        return waited
