"""open_session: mint an application session and return its handle (SEP-2567 style)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp_platform import ToolContext, tool


@tool(
    description="Open a new application session owned by the caller and return its handle. "
    "Pass the handle as the 'session' argument of session tools.",
    annotations={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False},
    output_schema={
        "type": "object",
        "properties": {"session": {"type": "string"}, "expires_at": {"type": "integer"}},
        "required": ["session", "expires_at"],
    },
)
async def open_session(
    ctx: ToolContext, title: Annotated[str, "Optional label for the session"] = ""
) -> dict[str, Any]:
    attributes = {"title": title[:200]} if title else None
    session = await ctx.services.sessions.open(ctx.principal, attributes=attributes)
    return {"session": session.id, "expires_at": session.ttl}
