"""append_note / read_notes: the session's context list (D3), written atomically (D10).

append_note is append-only (parallel calls on one session all commit); read_notes is
read-only (no write at all)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp_platform import ToolContext, ToolError, tool

MAX_NOTE_CHARS = 4000


@tool(
    description="Append a note to the session's context. Committed atomically with the call record.",
    annotations={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
    session="required",
    effect="append_only",
)
async def append_note(ctx: ToolContext, text: Annotated[str, "The note to append"]) -> dict[str, Any]:
    if not text.strip():
        raise ToolError("text must not be empty")
    if len(text) > MAX_NOTE_CHARS:
        raise ToolError(f"text must be at most {MAX_NOTE_CHARS} characters")
    ctx.append_to_session({"role": "note", "text": text})
    # No count in the answer: parallel appends commit without reading each other (append-only),
    # so any count computed here could be stale. read_notes / session_info give the total.
    return {"appended": 1}


@tool(
    description="Read the session's notes (most recent last).",
    annotations={"readOnlyHint": True, "openWorldHint": False},
    session="required",
    effect="read_only",
    # Notes are written only through the endpoint (through DAX when it is on): a cached session
    # shows every note another instance appended (X6).
    consistency="eventual",
)
async def read_notes(ctx: ToolContext, limit: Annotated[int, "How many of the latest notes"] = 20) -> dict[str, Any]:
    if limit < 1:
        raise ToolError("limit must be at least 1")
    notes = [entry for entry in ctx.session.context if isinstance(entry, dict)][-limit:]
    return {"notes": notes, "total": len(ctx.session.context)}
