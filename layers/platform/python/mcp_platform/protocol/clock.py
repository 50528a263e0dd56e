"""Time, in one shape and one spelling.

The platform's one injectable clock is :class:`Clock` (``now()``: epoch seconds): a component that
reads the wall clock takes one, so tests control expiry and timestamps. Instants are written as
text only by :func:`iso_utc`."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Literal, Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Current time as epoch seconds."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


SYSTEM_CLOCK = SystemClock()


class ManualClock:
    """A clock that moves only when told to (thread-safe)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds

    def set(self, epoch_seconds: float) -> None:
        with self._lock:
            self._now = epoch_seconds


TimeSpec = Literal["microseconds", "milliseconds", "auto"]


def iso_utc(epoch_seconds: float, timespec: TimeSpec = "microseconds") -> str:
    """ISO 8601 UTC text ending in ``Z``: the platform's one way to write an instant.

    ``microseconds`` (the default) is fixed width, so the text sorts lexicographically in time
    order: record sort keys, events, tasks. ``milliseconds`` is the audit trail's sort-key width
    (existing items sort against new ones) and AWS's failure-record format; ``auto`` drops a zero
    fraction (the session-expired summary's published format)."""
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC).replace(tzinfo=None)  # written with Z, not +00:00
    return moment.isoformat(timespec=timespec) + "Z"


def utc_now_iso(clock: Clock | None = None) -> str:
    """The current instant as :func:`iso_utc` writes it."""
    return iso_utc((clock or SYSTEM_CLOCK).now())


def utc_day(epoch_seconds: float) -> str:
    """The UTC day of an instant, ``YYYY-MM-DD``: the day usage is counted under."""
    return datetime.fromtimestamp(epoch_seconds, tz=UTC).date().isoformat()


def month_of(day: str) -> str:
    """The month, ``YYYY-MM``, of a ``YYYY-MM-DD`` day: the period of the monthly quotas."""
    return day[:7]
