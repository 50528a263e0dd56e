"""countdown: a long-running tool that streams progress and log notifications.

It declares how long one call may run (``max_seconds``): work that could not finish within it is
refused up front, and the runner stops a call that outlives it all the same.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from mcp_platform import ToolContext, ToolError, tool

MAX_SECONDS = 60  # far below the 840 s stream cap: one request cannot pin an instance for long


@tool(
    description="Count down for a while, reporting progress at each step (shows streaming). "
    f"steps x interval_ms may total at most {MAX_SECONDS} s.",
    annotations={"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    max_seconds=MAX_SECONDS,
)
async def countdown(
    ctx: ToolContext,
    steps: Annotated[int, "Number of steps (1-100)"] = 5,
    interval_ms: Annotated[int, "Pause between steps in milliseconds (0-10000)"] = 200,
) -> str:
    if not 1 <= steps <= 100 or not 0 <= interval_ms <= 10_000:
        raise ToolError("steps must be 1-100 and interval_ms 0-10000")
    if steps * interval_ms > MAX_SECONDS * 1000:
        raise ToolError(
            f"steps x interval_ms is {steps * interval_ms} ms, over countdown's {MAX_SECONDS} s limit (max_seconds)"
        )
    for step in range(steps):
        await ctx.progress(step, steps, f"step {step + 1} of {steps}")
        await ctx.log("info", {"step": step + 1})
        if ctx.cancelled.is_set():
            raise ToolError("cancelled")
        await asyncio.sleep(interval_ms / 1000)
    await ctx.progress(steps, steps, "done")
    return f"counted {steps} steps"
