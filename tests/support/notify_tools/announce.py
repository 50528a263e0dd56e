"""announce_notes: announces an update of ``session://<handle>/notes`` as the caller, the way a
tool that changes a session's notes would (the deployed tools do not announce it yet)."""

from __future__ import annotations

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.tools import tool


def notes_uri(handle: str) -> str:
    return f"session://{handle}/notes"


@tool(description="Test tool: announce an update of the notes of the session `handle`.")
async def announce_notes(ctx: ToolContext, handle: str) -> str:
    await ctx.notify_resource_updated(notes_uri(handle))
    return f"Announced an update of {notes_uri(handle)}"
