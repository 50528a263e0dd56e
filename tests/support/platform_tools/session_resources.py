"""session://{session} and session://{session}/notes: an application session as resources.

The caller's own sessions only: another principal's handle, an unknown one and an expired one
read alike as an unknown resource (no existence oracle, as for session tools).
"""

from __future__ import annotations

import json

from mcp_platform import ToolContext, resource_template

from ._session_views import notes_markdown, read_session


@resource_template(
    uri_template="session://{session}",
    description="An application session of the caller: version, expiry, status and counts (JSON).",
    mime_type="application/json",
)
async def session_summary(ctx: ToolContext, session: str) -> str:
    found = await read_session(ctx, session)
    summary = {
        "session": found.id,
        "version": found.version,
        "expires_at": found.ttl,
        "status": found.status,
        "tool_calls": found.tool_calls,
        "notes": len(found.context),
    }
    return json.dumps(summary, separators=(",", ":"))


@resource_template(
    uri_template="session://{session}/notes",
    description="The notes of an application session of the caller, oldest first (Markdown).",
    mime_type="text/markdown",
)
async def session_notes(ctx: ToolContext, session: str) -> str:
    return notes_markdown(await read_session(ctx, session))
