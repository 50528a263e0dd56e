"""session_report: a report over every tool call of a session, as a task when the client can.

Reading a long session's records takes one Query per page of 100; on a client that declared
the tasks extension the call runs in the task worker (``task="optional"``), so its length is
bounded by the worker, not by the client's request. Progress messages become the task's
``statusMessage``; a ``tasks/cancel`` stops it between pages.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mcp_platform import ToolContext, ToolError, tool

PAGE = 100


@tool(
    description="Report on every tool call of the session: calls and errors per tool, first and last call. "
    "Runs as a task for clients that support the tasks extension.",
    annotations={"readOnlyHint": True, "openWorldHint": False},
    session="required",
    effect="read_only",
    reads_context=False,  # it reads the session's id only
    task="optional",
)
async def session_report(ctx: ToolContext) -> dict[str, Any]:
    sessions, session = ctx.services.sessions, ctx.session
    calls: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    first = last = None
    cursor: str | None = None
    pages = 0
    while True:
        if ctx.cancelled.is_set():
            raise ToolError("cancelled")
        page = await sessions.tool_calls(session.id, owner=ctx.principal, limit=PAGE, cursor=cursor)
        pages += 1
        for record in page.records:
            calls[record.tool_name] += 1
            errors[record.tool_name] += record.is_error
            first = first or record.started_at
            last = record.started_at
        await ctx.progress(sum(calls.values()), message=f"read {sum(calls.values())} calls ({pages} pages)")
        cursor = page.next_cursor
        if cursor is None:
            break
    return {
        "session": session.id,
        "calls": sum(calls.values()),
        "by_tool": {name: {"calls": count, "errors": errors[name]} for name, count in sorted(calls.items())},
        "first_call": first,
        "last_call": last,
    }
