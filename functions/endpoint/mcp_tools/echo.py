"""echo: the smallest stateless tool (connectivity checks, benchmarks)."""

from __future__ import annotations

from typing import Annotated

from mcp_platform.mcp.context import ToolContext
from mcp_platform.mcp.tools import tool


@tool(
    description="Return the given text unchanged.",
    annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
)
async def echo(ctx: ToolContext, text: Annotated[str, "Text to return"]) -> str:
    return text
