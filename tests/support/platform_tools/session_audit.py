"""session_audit: the caller's own session trail from the audit table (A3), paginated."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from mcp_platform import ToolContext, ToolError, tool
from mcp_platform.application.audit.trail import InvalidCursor


@tool(
    description="Return the session's audit trail (changes with before/after diff), oldest first. "
    "Pass next_cursor back as cursor for the next page.",
    annotations={"readOnlyHint": True, "openWorldHint": False},
    session="required",
    effect="read_only",
    reads_context=False,  # it reads the session's id only
)
async def session_audit(
    ctx: ToolContext,
    limit: Annotated[int, "Records per page (1-100)"] = 20,
    cursor: Annotated[str | None, "next_cursor of the previous page"] = None,
) -> dict[str, Any]:
    trail = ctx.services.audit_trail
    if trail is None:
        raise ToolError("The audit trail is not configured on this deployment")
    # Ownership is already proven: session tools load the session bound to the caller.
    try:
        page = await asyncio.to_thread(trail.session_trail, ctx.session.id, limit=limit, cursor=cursor)
    except (InvalidCursor, ValueError) as exc:
        raise ToolError(str(exc)) from exc
    return {"records": page.records, "next_cursor": page.next_cursor}
