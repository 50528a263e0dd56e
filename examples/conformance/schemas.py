"""Scenarios json-schema-2020-12 and http-custom-header-server-validation: tools with hand-written
input schemas, served intact in tools/list and validated on tools/call."""

from __future__ import annotations

from typing import Any

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.tools import tool

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

# The schema the json-schema-2020-12 scenario expects to find, keyword for keyword.
CONTACT_SCHEMA: dict[str, Any] = {
    "$schema": DRAFT_2020_12,
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

REGION_SCHEMA: dict[str, Any] = {
    "$schema": DRAFT_2020_12,
    "type": "object",
    "properties": {
        "region": {
            "type": "string",
            "description": "Mirrored by the client in the Mcp-Param-Region header",
            "x-mcp-header": "Region",
        }
    },
    "additionalProperties": False,
}


@tool(
    name="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features",
    explicit_schema=CONTACT_SCHEMA,
    annotations={"readOnlyHint": True},
)
async def json_schema_2020_12_tool(
    ctx: ToolContext,
    name: str | None = None,
    address: dict[str, Any] | None = None,
    contactMethod: str | None = None,
    phone: str | None = None,
    email: str | None = None,
) -> str:
    given = {"name": name, "address": address, "contactMethod": contactMethod, "phone": phone, "email": email}
    return "accepted: " + ", ".join(key for key, value in given.items() if value is not None)


@tool(
    description="Echo the region argument, which the client mirrors in the Mcp-Param-Region header.",
    explicit_schema=REGION_SCHEMA,
    annotations={"readOnlyHint": True},
)
async def test_x_mcp_header(ctx: ToolContext, region: str = "<none>") -> str:
    return f"region={region}"
