"""Scenarios tools-call-with-logging, tools-call-with-progress and server-stateless (no log
notification unless the request names a level): tools that notify while they run."""

from __future__ import annotations

import asyncio

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.tools import tool

STEP_SECONDS = 0.05  # the scenarios ask for ~50 ms between notifications


@tool(description="Send three info log notifications, about 50 ms apart, while running.")
async def test_tool_with_logging(ctx: ToolContext) -> str:
    await ctx.log("info", "Tool execution started")
    await asyncio.sleep(STEP_SECONDS)
    await ctx.log("info", "Tool processing data")
    await asyncio.sleep(STEP_SECONDS)
    await ctx.log("info", "Tool execution completed")
    return "Tool with logging executed successfully"


@tool(description="Report progress 0, 50 and 100 of 100, about 50 ms apart (when the caller sent a progressToken).")
async def test_tool_with_progress(ctx: ToolContext) -> str:
    for progress in (0, 50, 100):
        if progress:
            await asyncio.sleep(STEP_SECONDS)
        await ctx.progress(progress, 100, f"Completed step {progress} of 100")
    return "Tool with progress executed successfully"


@tool(description="Log at info level while running: the server sends the log only if the request asked for it.")
async def test_logging_tool(ctx: ToolContext) -> str:
    await ctx.log("info", "test_logging_tool is running")
    await asyncio.sleep(STEP_SECONDS)
    await ctx.log("info", "test_logging_tool is done")
    return "Logging tool executed successfully"
