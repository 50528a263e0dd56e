"""Scenarios resources-subscribe, resources-unsubscribe (2025) and server-stateless's
subscriptions/listen checks (2026): the watched resource and the tools that announce changes.

The announcements go through the notification log in the table, so the stream that delivers them
may be on the other instance, as on Lambda. With the stack option ``subscriptions`` off they are
no-ops (nothing is advertised, nothing listens).
"""

from __future__ import annotations

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.resources import resource
from mcp_platform.protocol.tools import tool

WATCHED = "test://watched-resource"


# Public: it reads the same for every caller, so its updates reach every subscriber (a private
# resource's updates reach only the announcing principal's subscribers).
@resource(
    uri=WATCHED,
    description="A resource whose updates reach its subscribers.",
    mime_type="text/plain",
    cache=(0, "public"),
)
async def watched_resource(ctx: ToolContext) -> str:
    return "This resource is watched: test_trigger_resource_update announces an update."


@tool(description=f"Announce that {WATCHED} was updated, to every subscriber on any instance.")
async def test_trigger_resource_update(ctx: ToolContext) -> str:
    await ctx.notify_resource_updated(WATCHED)
    return f"Announced an update of {WATCHED}"


@tool(description="Announce a change of the tool list to every client listening for one.")
async def test_trigger_tool_change(ctx: ToolContext) -> str:
    await ctx.notify_list_changed("tools")
    return "Announced a tool list change"


@tool(description="Announce a change of the prompt list to every client listening for one.")
async def test_trigger_prompt_change(ctx: ToolContext) -> str:
    await ctx.notify_list_changed("prompts")
    return "Announced a prompt list change"
