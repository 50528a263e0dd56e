"""How a blocking call (boto3/botocore waiting on the network) is run from async code: a strategy
chosen once, at the composition root, and handed to whatever makes such calls.

* :class:`InThread` (the default): in a worker thread (``asyncio.to_thread``), so the event loop
  stays free for other requests while the call waits. Right wherever one process serves
  concurrent requests: local servers, tests, benchmarks.
* :class:`Inline`: on the event loop itself. Right where one process serves one request at a
  time (Lambda: one request per execution environment), where nobody else waits for the loop
  and the thread handoff each way is pure overhead. An inline call delays the loop's timers
  (keep-alive comments, the duration cap, a client disconnect) until it returns; botocore's
  connect and read timeouts bound it.

Every use case, store and stream that makes such calls takes the strategy in its constructor
(``blocking=``) from the root. Four paths run in a worker thread whatever the strategy, each for
a reason the strategy cannot serve:

* a tool written as a plain ``def`` (``protocol.signature``): the tool's own code, which may
  block for as long as it likes, while its call streams progress and keep-alives;
* the event flush shared by concurrent requests (``EventProducer.flush_async``) and the lifespan's
  shutdown flush: one group commit that every waiting request joins, bounded by the loop's timers;
* the JWKS download (``adapters.jwks``): one refresh shared by the requests that need the keys;
* a tool call's commit (``application.tool_calls``): a cancellation posted while it runs must
  still be read, and the commit then finishes shielded, its event flushed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, Protocol, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class Blocking(Protocol):
    """Runs ``function(*args, **kwargs)`` for async code; exceptions propagate."""

    async def __call__(self, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T: ...


class InThread:
    """In a worker thread: the loop serves other requests meanwhile."""

    async def __call__(self, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.to_thread(function, *args, **kwargs)


class Inline:
    """On the event loop: for a process that serves one request at a time."""

    async def __call__(self, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return function(*args, **kwargs)


IN_THREAD = InThread()
INLINE = Inline()
