"""increment_counter: a named counter in the session's attributes (read-modify-write, D2).

The new value is computed from the value read, so the tool declares ``read_modify_write``. It
reads one attribute (``counters``, through ``ctx.attribute``), so it commits under that
attribute's version alone: appends and other attributes never conflict with it, another
increment does, and a call that lost the race runs again on the state that won. Parallel
increments are never lost, and each answers the value it committed. It never reads the
session's context (``reads_context=False``): its calls cost the same whatever the session holds.

A host that renders MCP Apps shows each result in the tool's view (``ui=``: counter_view.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp_platform import ToolContext, ToolError, tool
from mcp_tools.counter_view import VIEW_URI

MAX_NAME_CHARS = 64
MAX_COUNTERS = 100
MAX_STEP = 1_000_000


@tool(
    description="Add to a named counter kept in the session and return its new value. "
    "Parallel calls on one session never lose an increment.",
    annotations={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False},
    session="required",
    effect="read_modify_write",
    reads_context=False,  # counters are attributes: the session's context is never loaded for it
    output_schema={
        "type": "object",
        "properties": {"name": {"type": "string"}, "value": {"type": "integer"}},
        "required": ["name", "value"],
    },
    ui=VIEW_URI,
)
async def increment_counter(
    ctx: ToolContext,
    name: Annotated[str, "Counter name (1-64 characters)"] = "default",
    by: Annotated[int, "Amount to add (may be negative)"] = 1,
) -> dict[str, Any]:
    if not 0 < len(name) <= MAX_NAME_CHARS:
        raise ToolError(f"name must be 1-{MAX_NAME_CHARS} characters")
    if not -MAX_STEP <= by <= MAX_STEP:
        raise ToolError(f"by must be between -{MAX_STEP} and {MAX_STEP}")
    counters = dict(ctx.attribute("counters") or {})
    if name not in counters and len(counters) >= MAX_COUNTERS:
        raise ToolError(f"a session holds at most {MAX_COUNTERS} counters")
    value = int(counters.get(name, 0)) + by
    ctx.set_attribute("counters", {**counters, name: value})
    return {"name": name, "value": value}
