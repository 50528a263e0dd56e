"""Tools exercising logging, progress and tool errors for the conformance suite."""

from __future__ import annotations

import asyncio

from mcp_platform.mcp.context import ToolContext
from mcp_platform.mcp.tools import ToolError, tool


@tool(description="Send three log messages while running.")
async def test_tool_with_logging(ctx: ToolContext) -> str:
    for step in ("starting", "working", "done"):
        await ctx.log("info", {"step": step})
        await asyncio.sleep(0.01)
    return "logged"


@tool(description="Report increasing progress three times.")
async def test_tool_with_progress(ctx: ToolContext) -> str:
    for step in range(3):
        await ctx.progress(step, 3, f"step {step + 1}")
        await asyncio.sleep(0.01)
    await ctx.progress(3, 3, "done")
    return "progressed"


@tool(description="Always fail with a tool error.")
async def test_error_handling(ctx: ToolContext) -> str:
    raise ToolError("This tool always fails, on purpose.")
