"""What governance needs of storage: shared window counters and the usage totals ingest keeps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from mcp_platform.application.governance.rules import RateRule


class CountersUnavailable(Exception):
    """The counters could not be reached or kept throttling: the request is answered "retry
    later" (never admitted unchecked)."""


@dataclass(frozen=True)
class WindowHit:
    """One admission, to be counted in ``rule``'s current window for ``subject`` (a principal,
    a client id, a tool name; empty for a rule that counts everyone together)."""

    rule: RateRule
    subject: str
    window_start: int
    """Epoch seconds: windows are aligned to multiples of the rule's period."""

    @property
    def window_end(self) -> int:
        return self.window_start + self.rule.seconds


class RateCounters(Protocol):
    def take(self, hits: Sequence[WindowHit]) -> WindowHit | None:
        """Count one admission in every hit's window, all or none: None when each window had
        room (all counted), else a hit whose window was full (nothing counted). Raises
        :class:`CountersUnavailable`."""
        ...


@dataclass(frozen=True)
class PeriodCalls:
    """Tool calls counted for one subject so far, in the current UTC day and month."""

    day: int
    month: int


class UsageTotals(Protocol):
    def calls(self, subject: str, *, month: str, day: str) -> PeriodCalls:
        """The calls counted for ``subject`` (a principal) in ``month`` (``YYYY-MM``) and on
        ``day`` (``YYYY-MM-DD``). Raises :class:`CountersUnavailable`."""
        ...
