"""A task tool whose result has the size a test asks for (a task item's outcome budget)."""

from __future__ import annotations

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.tools import tool


@tool(
    description="Test task: returns a text of `size` characters (`padding` only makes the request large).",
    task="required",
    structured_output=False,  # the text alone: its size is the result's size the tests budget
)
async def sized_result(ctx: ToolContext, padding: str, size: int) -> str:
    return "r" * size
