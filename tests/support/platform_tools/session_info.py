"""session_info: version, expiry and activity of an application session."""

from __future__ import annotations

from typing import Any

from mcp_platform import ToolContext, tool


@tool(
    description="Describe the session: version, expiry (epoch seconds), status and tool-call count.",
    annotations={"readOnlyHint": True, "openWorldHint": False},
    session="required",
    effect="read_only",
)
async def session_info(ctx: ToolContext) -> dict[str, Any]:
    session = ctx.session
    return {
        "session": session.id,
        "version": session.version,
        "expires_at": session.ttl,
        "status": session.status,
        "kind": session.kind,
        "tool_calls": session.tool_calls,
        "notes": len(session.context),
    }
