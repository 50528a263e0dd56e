"""admin_echo: echoes its text, but only for tokens carrying the notes:admin scope."""

from __future__ import annotations

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.tools import tool


@tool(description="Test tool: echoes text; needs the notes:admin scope.", scopes=["notes:admin"])
async def admin_echo(ctx: ToolContext, text: str) -> str:
    return text
