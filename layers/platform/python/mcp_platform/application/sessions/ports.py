"""The port the tool-call use case is written against: what it needs of a session store.

The DynamoDB store (:class:`mcp_platform.adapters.dynamodb.sessions.SessionStore`) implements it
structurally; the composition root hands it in through ``Services.sessions``. Every failure it
reports on purpose is a :class:`~mcp_platform.application.sessions.errors.SessionStoreError`:
the adapter translates the SDK's errors, so the use case never sees one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from mcp_platform.application.sessions.changes import SessionChanges
from mcp_platform.application.sessions.model import (
    KIND_APPLICATION,
    CommitResult,
    Session,
    ToolCall,
    ToolCallPage,
    ToolCallResult,
)


class SessionRepository(Protocol):
    """The session store as the use cases and tools see it (``adapters.dynamodb.sessions``)."""

    def create_session(
        self, owner: str, *, kind: str = KIND_APPLICATION, attributes: dict[str, Any] | None = None
    ) -> Session:
        """A new live session of ``owner`` (an application handle, or a 2025 transport session)."""
        ...

    def get_session(
        self, session_id: str, *, owner: str | None = None, consistent: bool, with_context: bool = True
    ) -> Session:
        """The caller's live session (SessionNotFound otherwise); ``consistent`` bypasses caches;
        ``with_context=False`` leaves its context unread (``Session.context`` empty)."""
        ...

    def end_session(self, session_id: str, *, owner: str | None = None) -> None: ...

    def list_tool_calls(
        self, session_id: str, *, owner: str | None = None, limit: int = 50, cursor: str | None = None, consistent: bool
    ) -> ToolCallPage:
        """A page of the session's tool-call records, oldest first; ``next_cursor`` for the next."""
        ...

    def load_for_tool_call(
        self,
        session_id: str,
        tool_call_id: str | None,
        *,
        owner: str | None,
        request_hash: str | None = None,
        consistent: bool = True,
        with_context: bool = True,
    ) -> tuple[Session, ToolCallResult | None]:
        """The session and, when this call id is committed already, its stored result (replay;
        ``tool_call_id`` None: a fresh id, under which nothing can be committed yet).
        ``with_context=False``: the session without its context (``Session.context`` empty), for
        a call that never reads it (append-only): its context is then not read at all."""
        ...

    def slide_expiry(self, session: Session, *, owner: str | None = None) -> Session:
        """``session`` with its ttl slid forward when less than half its lifetime remains (D7)."""
        ...

    def update_metadata(
        self,
        session_id: str,
        mutate: Callable[[Session], Session],
        *,
        owner: str | None = None,
        current: Session | None = None,
    ) -> Session:
        """``mutate`` applied under the session's version (D2), retried on a lost race. It may
        change the status and the attributes; the context grows only by appends (a commit)."""
        ...

    def commit(self, session: Session, record: ToolCall, changes: SessionChanges) -> CommitResult:
        """The call's ``record`` and its ``changes`` to ``session`` (as this run held it) in one
        atomic commit (D10), by the rules of ``sessions.commit_plan``: a lost race is
        VersionConflict, an id committed already DuplicateToolCall (same request) or
        IdempotencyKeyReused, a tool's own condition PreconditionFailed; a refused commit
        stores nothing."""
        ...
