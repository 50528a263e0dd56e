"""Scenarios tools-call-simple-text, -image, -audio, -embedded-resource and -mixed-content: one
tool per content type, returning exactly the content the scenario describes."""

from __future__ import annotations

import json

from examples.conformance._media import PNG_BASE64, WAV_BASE64
from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.tools import ToolResult, tool

IMAGE = {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}


@tool(description="Return one text content item.", annotations={"readOnlyHint": True})
async def test_simple_text(ctx: ToolContext) -> str:
    return "This is a simple text response for testing."


@tool(description="Return one image content item (a 1x1 PNG).", annotations={"readOnlyHint": True})
async def test_image_content(ctx: ToolContext) -> ToolResult:
    return ToolResult([IMAGE])


@tool(description="Return one audio content item (a short silent WAV).", annotations={"readOnlyHint": True})
async def test_audio_content(ctx: ToolContext) -> ToolResult:
    return ToolResult([{"type": "audio", "data": WAV_BASE64, "mimeType": "audio/wav"}])


@tool(description="Return one embedded text resource.", annotations={"readOnlyHint": True})
async def test_embedded_resource(ctx: ToolContext) -> ToolResult:
    resource = {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }
    return ToolResult([{"type": "resource", "resource": resource}])


@tool(description="Return text, image and embedded resource content together.", annotations={"readOnlyHint": True})
async def test_multiple_content_types(ctx: ToolContext) -> ToolResult:
    resource = {
        "uri": "test://mixed-content-resource",
        "mimeType": "application/json",
        "text": json.dumps({"test": "data", "value": 123}),
    }
    return ToolResult(
        [{"type": "text", "text": "Multiple content types test:"}, IMAGE, {"type": "resource", "resource": resource}]
    )
