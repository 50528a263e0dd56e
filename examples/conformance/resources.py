"""Scenarios resources-list, resources-read-text, resources-read-binary, resources-templates-read
and completion-complete (a template variable): fixed resources and one template, with the
exact contents each scenario describes."""

from __future__ import annotations

import base64
import json
from typing import Any

from examples.conformance._media import PNG_BASE64
from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.resources import resource, resource_template


@resource(
    uri="test://static-text", description="A static text resource.", mime_type="text/plain", cache=(60_000, "public")
)
async def static_text(ctx: ToolContext) -> str:
    return "This is the content of the static text resource."


@resource(uri="test://static-binary", description="A static binary resource (a 1x1 PNG).", mime_type="image/png")
async def static_binary(ctx: ToolContext) -> bytes:
    return base64.b64decode(PNG_BASE64)


async def complete_id(ctx: ToolContext, value: str, arguments: dict[str, Any]) -> list[str]:
    return [candidate for candidate in ("123", "124", "200") if candidate.startswith(value)]


@resource_template(
    uri_template="test://template/{id}/data",
    description="Data for one id: the id substituted into the JSON.",
    mime_type="application/json",
    completions={"id": complete_id},
)
async def template_data(ctx: ToolContext, id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})
