"""What the commit of a session tool may run into, and how each outcome is answered.

Every store error a tools/call can meet maps to one documented JSON-RPC code (README, "Error
codes"); none becomes -32603. Retryable ones carry ``data.retryable`` and, where the transport
can still say so, HTTP 503 + Retry-After (``retry_after_seconds``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

from mcp_platform.application.metrics import STORE_CONFLICTS, STORE_THROTTLES
from mcp_platform.application.sessions import errors as session_errors
from mcp_platform.application.sessions.retry import Backoff
from mcp_platform.protocol.jsonrpc import (
    CONFLICT,
    INVALID_PARAMS,
    LIMIT_EXCEEDED,
    PRECONDITION_FAILED,
    SESSION_NOT_FOUND,
    STORE_REJECTED,
    UNAVAILABLE,
    JSONObject,
    JsonRpcError,
)

RETRY_AFTER_SECONDS = 1
# A read-modify-write tool that lost the race runs again on the fresh state: 50 ms exponential
# backoff with jitter (D2), capped at 0.5 s, 30 runs at most (about 13 s of waits). Calls on one
# session queue per instance (SessionLocks) and the instance that won commits its queue without
# a read, so a call that lost to another instance mostly wins once that queue has drained:
# with three instances of 16 queued increments each (amid 256 appends) losers needed up to 8
# runs on the local emulator, where ten runs left no margin.
RERUN_BACKOFF = Backoff(retries=29, cap_seconds=0.5)


def unavailable(message: str) -> JsonRpcError:
    return JsonRpcError(UNAVAILABLE, message, {"retryable": True, "retryAfterSeconds": RETRY_AFTER_SECONDS}, 503)


def is_store_throttle(exc: BaseException) -> bool:
    """Whether ``exc`` says the session store throttled. What a throttled AWS call looks like
    otherwise is the adapters' knowledge: the composition root passes their classifier
    (``adapters.dynamodb.aws_errors.is_throttle``) to the use cases that need it."""
    return isinstance(exc, session_errors.StoreThrottled)


def store_counter(exc: session_errors.SessionStoreError) -> str | None:
    """The counter a store error adds to, if any: a lost race (VersionConflict, each one a rerun
    or the last) or a transaction that kept conflicting through the store's retries is a
    conflict; StoreThrottled a throttle."""
    if isinstance(exc, session_errors.VersionConflict | session_errors.TransactionConflict):
        return STORE_CONFLICTS
    if isinstance(exc, session_errors.StoreThrottled):
        return STORE_THROTTLES
    return None


def store_error(exc: session_errors.SessionStoreError) -> JsonRpcError:
    """The answer to a store error met while loading or committing a call."""
    if isinstance(exc, session_errors.SessionNotFound):
        return JsonRpcError(SESSION_NOT_FOUND, "Session not found or expired")
    if isinstance(exc, session_errors.IdempotencyKeyReused):
        return JsonRpcError(INVALID_PARAMS, "This idempotency key was already used for a different request")
    if isinstance(exc, session_errors.VersionConflict | session_errors.IdempotencyTokenReused):
        return JsonRpcError(CONFLICT, "Session changed concurrently; retry the call", {"retryable": True})
    if isinstance(exc, session_errors.StoreThrottled):
        return unavailable("The session store is throttling requests; retry the call shortly")
    if isinstance(exc, session_errors.StoreUnavailable):
        return unavailable("The session store is unavailable; retry the call shortly")
    if isinstance(exc, session_errors.TransactionConflict):
        return unavailable("The session is busy with other calls; retry the call shortly")
    if isinstance(exc, session_errors.PreconditionFailed):
        return JsonRpcError(PRECONDITION_FAILED, f"Precondition failed: {exc}", {"label": exc.label})
    if isinstance(exc, session_errors.SessionCapacityExceeded):
        data: JSONObject = {"limit": f"session_{exc.what}_bytes", "bytes": exc.budget_bytes}
        return JsonRpcError(LIMIT_EXCEEDED, f"Session is full: {exc}; open a new session", data)
    if isinstance(exc, session_errors.CallRecordTooLarge):
        data = {"limit": "call_record_bytes", "bytes": exc.budget_bytes, "requested": exc.requested_bytes}
        return JsonRpcError(LIMIT_EXCEEDED, f"The call is too large to record: {exc}", data)
    if isinstance(exc, session_errors.TransactionTooLarge):
        return JsonRpcError(LIMIT_EXCEEDED, f"The call's writes are too large: {exc}", {"limit": "transaction"})
    return JsonRpcError(STORE_REJECTED, f"The session store refused the call's writes: {exc}")


class SessionLocks:
    """Serialises read-modify-write calls on one session *within this instance*: they could
    only conflict with each other, so waiting here replaces a failed round trip. Across
    instances the version conditions still decide. ``newest`` keeps the latest state a call
    committed, so the next one starts from it instead of from its (older) load."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: Counter[str] = Counter()
        self._newest: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        self._users[session_id] += 1
        try:
            async with lock:
                yield
        finally:
            self._users[session_id] -= 1
            if not self._users[session_id]:  # nobody waits: forget the session (bounded memory)
                del self._users[session_id]
                self._locks.pop(session_id, None)
                self._newest.pop(session_id, None)

    def newest(self, session: Any) -> Any:
        """``session`` as loaded, with what this instance committed since (``Session.newest_with``)."""
        known = self._newest.get(session.id)
        return session if known is None else session.newest_with(known)

    def remember(self, session: Any) -> None:
        if session.id in self._users:
            self._newest[session.id] = session
