"""flaky_append: an append-only session tool whose first runs are throttled by AWS.

``THROTTLES[tag]`` says how many runs still raise a ThrottlingException before one succeeds;
``RUNS[tag]`` counts the runs, so a test can tell a rerun from a replayed result.
"""

from __future__ import annotations

from collections import Counter

from botocore.exceptions import ClientError

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.tools import tool

THROTTLES: Counter[str] = Counter()
RUNS: Counter[str] = Counter()


@tool(
    description="Test tool: appends a note; throttled by AWS while THROTTLES[tag] > 0.",
    session="required",
    effect="append_only",
)
async def flaky_append(ctx: ToolContext, tag: str) -> dict[str, int]:
    RUNS[tag] += 1
    if THROTTLES[tag] > 0:
        THROTTLES[tag] -= 1
        error = {"Error": {"Code": "ThrottlingException", "Message": "Rate of requests exceeds the allowed throughput"}}
        raise ClientError(error, "Query")  # type: ignore[arg-type]
    ctx.append_to_session({"role": "note", "text": tag})
    return {"run": RUNS[tag]}
