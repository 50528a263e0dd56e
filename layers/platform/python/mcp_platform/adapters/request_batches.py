"""Order-preserving splits of items into AWS batch requests bounded by a count and a byte size
(Kinesis PutRecords, SQS SendMessageBatch): pure, no I/O."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def bounded_runs(items: Iterable[T], *, size: Callable[[T], int], max_items: int, max_bytes: int) -> list[list[T]]:
    """Greedy runs of consecutive ``items``, each within ``max_items`` and ``max_bytes`` (by
    ``size``). An item larger than ``max_bytes`` alone is a run of its own: callers check items
    against their own limit first, so every run holds at least one item."""
    runs: list[list[T]] = []
    run: list[T] = []
    run_bytes = 0
    for item in items:
        item_bytes = size(item)
        if run and (len(run) >= max_items or run_bytes + item_bytes > max_bytes):
            runs.append(run)
            run, run_bytes = [], 0
        run.append(item)
        run_bytes += item_bytes
    if run:
        runs.append(run)
    return runs
