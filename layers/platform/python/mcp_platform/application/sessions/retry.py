"""Bounded exponential backoff shared by the D2 and D10 retry policies (3 retries, 50 ms base),
and the longer budget for TransactionConflict (``CONFLICT_BACKOFF``)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Backoff:
    """``retries`` waits of ``base_seconds * 2**n`` (at most ``cap_seconds``), each scaled by a
    jitter in [0.5, 1.5)."""

    retries: int = 3
    base_seconds: float = 0.05
    jitter: bool = True
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    cap_seconds: float = 1.0

    def delays(self) -> Iterator[float]:
        for attempt in range(self.retries):
            delay = min(self.base_seconds * 2**attempt, self.cap_seconds)
            yield delay * (0.5 + random.random()) if self.jitter else delay

    def attempts(self) -> Iterator[int]:
        """Yield attempt numbers 0..retries, sleeping before each retry."""
        yield 0
        for attempt, delay in enumerate(self.delays(), start=1):
            self.sleep(delay)
            yield attempt


# DynamoDB cancels a transaction that touches an item another transaction is writing
# (TransactionConflict); parallel calls on one session do that often. Six retries (about
# 3 s at most) make an exhausted budget rare even at a 30 % conflict rate (0.3^7 < 0.03 %).
CONFLICT_BACKOFF = Backoff(retries=6)
