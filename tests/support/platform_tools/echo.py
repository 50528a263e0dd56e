"""echo: the smallest stateless tool (connectivity checks, benchmarks)."""

from __future__ import annotations

from typing import Annotated

from mcp_platform import ToolContext, tool


@tool(annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False})
async def echo(ctx: ToolContext, text: Annotated[str, "Text to return"]) -> str:
    """Return the given text unchanged."""
    return text
