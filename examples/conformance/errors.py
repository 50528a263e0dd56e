"""Scenarios tools-call-error and server-stateless (-32021): a tool that always fails, and one
that needs a client capability the suite does not declare."""

from __future__ import annotations

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.tools import ToolError, tool


@tool(description="Always fail: answered as a tool result with isError true.")
async def test_error_handling(ctx: ToolContext) -> str:
    raise ToolError("This tool intentionally returns an error for testing")


@tool(
    description="Needs the client's sampling capability: refused with -32021 when the request did not declare it.",
    requires_client={"sampling": {}},
)
async def test_missing_capability(ctx: ToolContext) -> str:
    return "Client declared sampling capability; proceeding."
