"""countdown: a long-running tool that streams progress and log notifications."""

from __future__ import annotations

import asyncio
from typing import Annotated

from mcp_platform.mcp.context import ToolContext
from mcp_platform.mcp.tools import ToolError, tool


@tool(
    description="Count down for a while, reporting progress at each step (shows streaming).",
    annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
)
async def countdown(
    ctx: ToolContext,
    steps: Annotated[int, "Number of steps (1-100)"] = 5,
    interval_ms: Annotated[int, "Pause between steps in milliseconds (0-10000)"] = 200,
) -> str:
    if not 1 <= steps <= 100 or not 0 <= interval_ms <= 10_000:
        raise ToolError("steps must be 1-100 and interval_ms 0-10000")
    for step in range(steps):
        await ctx.progress(step, steps, f"step {step + 1} of {steps}")
        await ctx.log("info", {"step": step + 1})
        if ctx.cancelled.is_set():
            raise ToolError("cancelled")
        await asyncio.sleep(interval_ms / 1000)
    await ctx.progress(steps, steps, "done")
    return f"counted {steps} steps"
