"""recent_tool_events: the caller's session's recent tool-call events, read from Kinesis (K4)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Annotated, Any

from mcp_platform import ToolContext, ToolError, tool


@tool(
    description="List this session's recent tool-call events from the event stream (newest last). "
    "Events of calls that are still being published may appear a moment later.",
    annotations={"readOnlyHint": True, "openWorldHint": False},
    session="required",
    effect="read_only",
    reads_context=False,  # it reads the session's id only
)
async def recent_tool_events(
    ctx: ToolContext,
    minutes: Annotated[int, "How far back to look (1-1440)"] = 60,
    limit: Annotated[int, "At most this many events (1-200)"] = 50,
) -> dict[str, Any]:
    recent = ctx.services.recent_events
    if recent is None:
        raise ToolError("The event stream is not configured on this deployment")
    if not 1 <= minutes <= 1440 or not 1 <= limit <= 200:
        raise ToolError("minutes must be 1-1440 and limit 1-200")
    # The shard reader fetches iterators right before reading and paces GetRecords (K4);
    # the read is bounded in time so the tool answers within a couple of seconds.
    found = await asyncio.to_thread(
        recent.session_events, ctx.session.id, lookback=timedelta(minutes=minutes), max_events=limit
    )
    return {
        "events": [event.to_dict() for event in found.events],
        "truncated": found.truncated,
        "skipped_invalid": found.skipped_invalid,
    }
