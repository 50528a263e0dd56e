"""probe: runs ~3 s reporting progress; records in OUTCOMES whether it completed or was cancelled."""

from __future__ import annotations

import asyncio

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.tools import tool

OUTCOMES: dict[str, str] = {}


@tool(description="Test probe: runs about 3 s with progress; records whether it completed.")
async def probe(ctx: ToolContext, tag: str) -> str:
    OUTCOMES[tag] = "started"
    try:
        for step in range(30):
            await ctx.progress(step, 30)
            await asyncio.sleep(0.1)
    except asyncio.CancelledError:
        OUTCOMES[tag] = "cancelled"  # the transport stopped the call
        raise
    OUTCOMES[tag] = "completed"
    return "completed"
