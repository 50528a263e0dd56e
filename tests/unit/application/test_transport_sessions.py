"""2025 transport sessions as a use case (application.transport_sessions), against an in-memory
store: opened with the transport kind, required live, the caller's and of that kind, ended only
as such; every "no" is the same SessionNotFound."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_platform.application.sessions.errors import SessionNotFound
from mcp_platform.application.sessions.model import KIND_TRANSPORT, Session
from mcp_platform.application.transport_sessions import TransportSessions


class MemoryStore:
    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self.ended: list[str] = []

    def create_session(self, owner: str, *, kind: str, attributes: dict[str, Any] | None) -> Session:
        session_id = f"{len(self.sessions):032d}"
        session = Session(session_id, owner, "active", 1, 2**31, kind=kind, attributes=dict(attributes or {}))
        self.sessions[session_id] = session
        return session

    def get_session(
        self, session_id: str, *, owner: str | None, consistent: bool, with_context: bool = True
    ) -> Session:
        session = self.sessions.get(session_id)
        if session is None or session_id in self.ended or (owner is not None and session.owner != owner):
            raise SessionNotFound(session_id)
        return session

    def end_session(self, session_id: str, *, owner: str | None) -> None:
        self.get_session(session_id, owner=owner, consistent=True)
        self.ended.append(session_id)


def test_a_transport_session_is_opened_required_and_ended_by_its_owner() -> None:
    store = MemoryStore()
    sessions = TransportSessions(store)

    async def scenario() -> None:
        opened = await sessions.open("alice", {"log_level": "debug"})
        assert opened.kind == KIND_TRANSPORT and opened.attributes == {"log_level": "debug"}
        assert (await sessions.require(opened.id, "alice")).id == opened.id
        with pytest.raises(SessionNotFound):
            await sessions.require(opened.id, "bob")
        with pytest.raises(SessionNotFound):
            await sessions.end(opened.id, "bob")
        await sessions.end(opened.id, "alice")
        with pytest.raises(SessionNotFound):
            await sessions.require(opened.id, "alice")

    asyncio.run(scenario())
    assert store.ended == ["00000000000000000000000000000000"]


def test_an_application_handle_is_no_transport_session_and_does_not_end_as_one() -> None:
    store = MemoryStore()
    handle = store.create_session("alice", kind="application", attributes=None)
    sessions = TransportSessions(store)

    async def scenario() -> None:
        with pytest.raises(SessionNotFound):
            await sessions.require(handle.id, "alice")
        with pytest.raises(SessionNotFound):
            await sessions.end(handle.id, "alice")

    asyncio.run(scenario())
    assert store.ended == []
