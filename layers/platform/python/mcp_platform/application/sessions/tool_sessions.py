"""The session store as a tool uses it: awaitable, so a tool never hands a blocking call to a
thread itself (``ctx.services.sessions``). Each call runs the store's blocking method the way the
composition root chose for this process (a worker thread, or inline in Lambda)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_platform.application.blocking import IN_THREAD, Blocking
from mcp_platform.application.sessions.model import Session, ToolCallPage
from mcp_platform.application.sessions.ports import SessionRepository


@dataclass(frozen=True)
class ToolSessions:
    store: SessionRepository
    blocking: Blocking = IN_THREAD

    async def open(self, owner: str, *, attributes: dict[str, Any] | None = None) -> Session:
        """A new application session of ``owner``; its id is the handle a client passes back
        as a session tool's ``session`` argument."""
        return await self.blocking(self.store.create_session, owner, attributes=attributes)

    async def get(self, session_id: str, *, owner: str, consistent: bool = False) -> Session:
        """The live session ``session_id`` of ``owner``, else ``SessionNotFound`` (missing,
        expired, ended and another principal's read alike). Eventually consistent unless asked:
        a cached live answer is safe, and a cached "missing" is confirmed by a consistent read."""
        return await self.blocking(self.store.get_session, session_id, owner=owner, consistent=consistent)

    async def tool_calls(
        self, session_id: str, *, owner: str, limit: int = 50, cursor: str | None = None
    ) -> ToolCallPage:
        """A page of the session's tool-call records, oldest first (consistent: a report must
        see the calls committed so far); pass ``next_cursor`` back for the next page."""
        return await self.blocking(
            self.store.list_tool_calls, session_id, owner=owner, limit=limit, cursor=cursor, consistent=True
        )
