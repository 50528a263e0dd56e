"""2025 transport sessions: the ``Mcp-Session-Id`` a client gets from ``initialize`` and sends
with every later request, until it ends the session (DELETE) or the session expires.

They are sessions of the session store like the application's handles (``open_session``),
told apart by their kind: a handle is no transport session, and a transport session is the
caller's only. Every "no" is the same :class:`SessionNotFound`, whatever the reason (missing,
expired, ended, another principal's, another kind), so the answer is no existence oracle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from mcp_platform.application.blocking import IN_THREAD, Blocking
from mcp_platform.application.sessions.errors import SessionNotFound
from mcp_platform.application.sessions.model import KIND_TRANSPORT

if TYPE_CHECKING:
    from mcp_platform.application.sessions.model import Session


class TransportSessionStore(Protocol):
    """What transport sessions need of the session store (``adapters.dynamodb.sessions``)."""

    def create_session(self, owner: str, *, kind: str, attributes: dict[str, Any] | None) -> Session: ...

    def get_session(self, session_id: str, *, owner: str | None, consistent: bool, with_context: bool) -> Session:
        """The live session, else :class:`SessionNotFound`; ``consistent=False`` may be served
        by a cache, which confirms a "missing" or "expired" answer with a consistent read;
        ``with_context=False``: its context (items of their own) is not read."""
        ...

    def end_session(self, session_id: str, *, owner: str | None) -> None: ...


class TransportSessions:
    """Create, check and end 2025 transport sessions."""

    def __init__(self, store: TransportSessionStore, *, blocking: Blocking = IN_THREAD) -> None:
        self.store = store
        self.blocking = blocking
        """How the session check runs its blocking read (chosen by the composition root)."""

    async def open(self, owner: str, attributes: dict[str, Any]) -> Session:
        """A new transport session for ``owner``, keeping what its initialize negotiated."""
        return await self.blocking(self.store.create_session, owner, kind=KIND_TRANSPORT, attributes=attributes)

    async def require(self, session_id: str, owner: str) -> Session:
        """The live transport session ``session_id`` of ``owner``, else :class:`SessionNotFound`."""
        # X6: "exists, is the caller's, is alive" only, so eventually consistent (the DAX item cache
        # serves it): a cached live session is a safe answer (its owner never changes; it ends or
        # is extended only through writers that go through DAX), and a cached "missing" or
        # "expired" is confirmed by one consistent read inside get_session before any "no".
        # The check reads the metadata item alone: never the context a session tool appended.
        session = await self.blocking(
            self.store.get_session, session_id, owner=owner, consistent=False, with_context=False
        )
        if session.kind != KIND_TRANSPORT:
            raise SessionNotFound(session_id)  # an application handle is not an Mcp-Session-Id
        return session

    async def end(self, session_id: str, owner: str) -> None:
        """End ``owner``'s transport session (only transport sessions end this way), else
        :class:`SessionNotFound`."""
        await self.require(session_id, owner)
        await self.blocking(self.store.end_session, session_id, owner=owner)
