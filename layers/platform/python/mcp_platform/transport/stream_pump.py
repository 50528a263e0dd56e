"""The loop of a notification stream: poll with backoff, send, keep alive, end at the cap (S7).

The first poll runs ``poll_min_seconds`` after opening, then each empty poll doubles the wait up
to ``poll_max_seconds``, and a poll that found something resets it (changes come in bursts; an
idle stream costs little). A keep-alive comment fills every ``keepalive_seconds`` of silence; the
stream ends at ``max_stream_seconds``, below the function timeout: behind a Function URL a closed
stream is never seen, and the open invocation is billed until it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp_platform.application.blocking import IN_THREAD, Blocking
from mcp_platform.application.notifications import Notice
from mcp_platform.application.sessions.errors import SessionStoreError

logger = logging.getLogger(__name__)

KEEPALIVE = b": keep-alive\n\n"

Poll = Callable[[], list[Notice] | None]
"""One poll (run in a thread): what to send, oldest first; None ends the stream."""
Render = Callable[[Notice], bytes]


class StreamTimer(Protocol):
    """The stream's clock and its wait (a test drives a stream through virtual time)."""

    def now(self) -> float: ...

    async def wait(self, seconds: float, stop: asyncio.Event) -> bool:
        """Wait ``seconds`` or until ``stop`` is set; True if stopped."""
        ...


class LoopTimer:
    def now(self) -> float:
        return time.monotonic()  # read from the poll's thread too: no event loop needed

    async def wait(self, seconds: float, stop: asyncio.Event) -> bool:
        try:
            await asyncio.wait_for(stop.wait(), seconds)
        except TimeoutError:
            return False
        return True


@dataclass
class StreamPump:
    keepalive_seconds: float = 15.0
    max_stream_seconds: float = 840.0
    poll_min_seconds: float = 0.1
    poll_max_seconds: float = 5.0
    timer: StreamTimer = field(default_factory=LoopTimer)
    blocking: Blocking = IN_THREAD
    """How a poll of the notification log runs (the root's strategy)."""

    async def run(self, send: Any, receive: Any, poll: Poll, render: Render) -> bool:
        """True when the duration cap ended the stream; False when the client went away or the
        poll ended it (lease lost, session gone)."""
        stop = asyncio.Event()
        watcher = asyncio.create_task(_until_disconnect(receive, stop))
        timer = self.timer
        try:
            now = timer.now()
            deadline, delay = now + self.max_stream_seconds, self.poll_min_seconds
            next_poll, next_keepalive = now + delay, now + self.keepalive_seconds
            while True:
                if timer.now() >= deadline:
                    return True
                if timer.now() >= next_poll:
                    found = await _poll(poll, self.blocking)
                    if found is None:
                        return False
                    for notice in found:
                        await chunk(send, render(notice))
                    if found:
                        next_keepalive = timer.now() + self.keepalive_seconds
                    delay = self.poll_min_seconds if found else min(delay * 2, self.poll_max_seconds)
                    next_poll = timer.now() + delay
                if timer.now() >= next_keepalive:
                    await chunk(send, KEEPALIVE)
                    next_keepalive = timer.now() + self.keepalive_seconds
                if await timer.wait(max(0.0, min(next_poll, next_keepalive, deadline) - timer.now()), stop):
                    return False
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher


async def _poll(poll: Poll, blocking: Blocking) -> list[Notice] | None:
    try:
        return await blocking(poll)
    except SessionStoreError:
        # A store error (the adapters translate the SDK's): a failed poll delays delivery by one
        # interval; the next one reads from the same bound (the reader moves it only when a poll
        # completes), so nothing is lost.
        logger.warning("notification poll failed; polling again", exc_info=True)
        return []


async def chunk(send: Any, body: bytes) -> None:
    await send({"type": "http.response.body", "body": body, "more_body": True})


async def _until_disconnect(receive: Any, stop: asyncio.Event) -> None:
    """The request body is read: the next message can only be the client going away. (Behind
    the Web Adapter none arrives; the duration cap ends the stream.)"""
    while (await receive())["type"] != "http.disconnect":
        continue
    stop.set()
