"""Reads shared by the session resources and prompts (not a feature module: no spec here)."""

from __future__ import annotations

from mcp_platform import ResourceNotFound, Session, SessionNotFound, ToolContext


async def read_session(ctx: ToolContext, handle: str) -> Session:
    """The caller's live session, or ResourceNotFound: another principal's handle, an unknown
    one and an expired one read alike (no existence oracle, as for session tools)."""
    try:
        # Eventually consistent read (may come from DAX): a cached *live* answer is safe, and a
        # cached "missing" is confirmed with a consistent read inside get_session (X4).
        return await ctx.services.sessions.get(handle, owner=ctx.principal)
    except SessionNotFound as exc:
        raise ResourceNotFound(handle) from exc


def notes_markdown(session: Session) -> str:
    notes = [entry.get("text", "") for entry in session.context if isinstance(entry, dict)]
    return "\n".join(f"- {note}" for note in notes) if notes else "_No notes yet._"
