"""Cancelling a 2025 call that is still running, on this instance or on another one.

A 2025 client cancels with ``notifications/cancelled`` naming the request id. The call may run
right here (a local server, a test: the same process took both requests), or, on Lambda, in
another execution environment: one environment serves one request at a time, so the POST
carrying the cancellation never reaches the one streaming the call. Then the cancellation
becomes a short-lived *cancel flag* in a store every instance reads (the session table,
:mod:`mcp_platform.adapters.dynamodb.cancellation`), and the instance running the call polls
for it and stops the call exactly as a local cancellation does.

The transport only registers its calls (:meth:`CallCancellation.running`), forwards what a
client asks (:meth:`CallCancellation.cancel`) and asks for a streamed call to be watched
(:meth:`CallCancellation.watch`); who may cancel what, and where the flag goes, is decided here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from mcp_platform.application.blocking import IN_THREAD, Blocking
from mcp_platform.application.sessions.errors import SessionStoreError
from mcp_platform.protocol.jsonrpc import RequestId
from mcp_platform.protocol.request_context import RequestContext

logger = logging.getLogger(__name__)

DEFAULT_POLL_SECONDS = 2.0


class CancelCheckFailed(SessionStoreError):
    """The flag could not be read (throttled, unreachable): the caller checks again later."""


class CancelFlagStore(Protocol):
    """Cancel flags every instance can read (implemented by the session table's adapter)."""

    def request(self, session_id: str, request_id: RequestId, *, owner: str) -> None:
        """Leave the flag. The caller has checked that ``owner`` owns the session; a repeated
        cancellation rewrites the same flag."""

    def is_requested(self, session_id: str, request_id: RequestId, *, owner: str) -> bool:
        """Whether a live flag left by ``owner`` names this request; raises
        :class:`CancelCheckFailed` when the store cannot tell."""


class CallCancellation:
    """The 2025 calls running on this instance, and the way a cancellation reaches them.

    One per process, shared by every request. ``flags`` None: cancellations reach local calls
    only (no store to leave a flag in)."""

    def __init__(
        self,
        flags: CancelFlagStore | None = None,
        *,
        poll_seconds: float = DEFAULT_POLL_SECONDS,
        blocking: Blocking = IN_THREAD,
    ) -> None:
        if poll_seconds <= 0:
            raise ValueError(f"poll_seconds must be positive, got {poll_seconds}")
        self.flags = flags
        self.blocking = blocking
        self.poll_seconds = poll_seconds
        # Keyed by principal too: only a session's owner reaches its calls.
        self._running: dict[tuple[str, str, RequestId], asyncio.Event] = {}

    @contextmanager
    def running(self, call: RequestContext, request_id: RequestId) -> Iterator[None]:
        """For the duration of the block, a local cancellation of ``request_id`` in the call's
        transport session sets ``call.cancelled``."""
        session_id = call.transport_session_id
        if session_id is None:  # nothing can name it: 2025 cancellations name a session's request
            yield
            return
        key = (call.principal, session_id, request_id)
        self._running[key] = call.cancelled
        try:
            yield
        finally:
            self._running.pop(key, None)

    async def cancel(self, session_id: str, request_id: RequestId, *, owner: str) -> None:
        """``owner`` cancels one of its requests in its session (the caller checked both): stop
        it here if it runs here, else leave a flag for the instance running it."""
        cancelled = self._running.get((owner, session_id, request_id))
        if cancelled is not None:
            cancelled.set()
        elif self.flags is not None:
            await self.blocking(self.flags.request, session_id, request_id, owner=owner)

    def watch(self, call: RequestContext, request_id: RequestId) -> Coroutine[Any, Any, None] | None:
        """What to run beside a streamed call so a cancellation posted to another instance stops
        it (sets ``call.cancelled``); None when none can be: a 2026 call (its client cancels by
        closing the stream), a call outside a transport session, or no flag store."""
        session_id = call.transport_session_id
        if self.flags is None or call.modern or session_id is None:
            return None
        return self._poll(self.flags, session_id, request_id, call)

    async def _poll(self, flags: CancelFlagStore, session_id: str, request_id: RequestId, call: RequestContext) -> None:
        """The first check waits one interval: most calls finish before it and cost no read."""
        while not call.cancelled.is_set():
            await asyncio.sleep(self.poll_seconds)
            try:
                found = await self.blocking(flags.is_requested, session_id, request_id, owner=call.principal)
            except CancelCheckFailed:
                # A missed tick delays the cancellation by one interval; the call goes on.
                logger.warning("cancel flag check failed; checking again next tick", exc_info=True)
                continue
            if found:
                call.cancelled.set()
