"""Blocking AWS calls on a request's critical path: in a worker thread only when it buys something.

A worker-thread hop (``asyncio.to_thread``) keeps the event loop free for other requests while
boto3 waits on the network; it costs a thread handoff each way (tens to hundreds of µs of CPU and
wake-up latency). On Lambda one execution environment serves one request at a time, so nobody
else is waiting for the loop: there the hop is pure overhead. :func:`call` therefore runs the
function inline while the HTTP request calling it is the only one in flight on this process
(:func:`request` counts them), and in a worker thread otherwise (local servers, tests and
benchmarks with concurrent requests). Paths that must stay bounded by the loop's own timers
(the shutdown flush) use ``asyncio.to_thread`` directly: no request is in flight there, so
:func:`call` would hop anyway.

A call run inline delays the loop's timers (keep-alive comments, the duration cap, a client
disconnect) until it returns; botocore's connect/read timeouts bound it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_in_flight = 0


class _InFlight:
    """Counts one HTTP request in flight for the duration of the block (a plain class: a
    generator-based context manager cost ~1 us on every request)."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _in_flight
        _in_flight += 1

    def __exit__(self, *exc_info: object) -> None:
        global _in_flight
        _in_flight -= 1


_IN_FLIGHT = _InFlight()


def request() -> _InFlight:
    """``with request():`` counts one HTTP request in flight for the duration of the block."""
    return _IN_FLIGHT


def alone() -> bool:
    """True while exactly one request is in flight (the caller's): blocking harms nobody."""
    return _in_flight == 1


async def call(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``function(*args, **kwargs)``: inline when the calling request is alone, else in a worker
    thread. Exceptions propagate either way."""
    if _in_flight == 1:
        return function(*args, **kwargs)
    return await asyncio.to_thread(function, *args, **kwargs)
