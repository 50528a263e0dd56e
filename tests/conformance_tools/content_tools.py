"""Tools returning each content type the conformance suite checks."""

from __future__ import annotations

import base64

from mcp_platform.mcp.context import ToolContext
from mcp_platform.mcp.tools import ToolResult, tool

# A 1x1 transparent PNG and a tiny silent WAV: valid media, a few bytes each.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(
    b"RIFF"
    + (36).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (1).to_bytes(2, "little")
    + (8000).to_bytes(4, "little")
    + (8000).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (8).to_bytes(2, "little")
    + b"data"
    + (0).to_bytes(4, "little")
).decode()
RESOURCE = {"type": "resource", "resource": {"uri": "test://embedded", "mimeType": "text/plain", "text": "embedded"}}


@tool(description="Return simple text content.")
async def test_simple_text(ctx: ToolContext) -> str:
    return "This is a simple text response for testing."


@tool(description="Return image content.")
async def test_image_content(ctx: ToolContext) -> ToolResult:
    return ToolResult([{"type": "image", "data": PNG, "mimeType": "image/png"}])


@tool(description="Return audio content.")
async def test_audio_content(ctx: ToolContext) -> ToolResult:
    return ToolResult([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}])


@tool(description="Return an embedded resource.")
async def test_embedded_resource(ctx: ToolContext) -> ToolResult:
    return ToolResult([RESOURCE])


@tool(description="Return text, image and resource content together.")
async def test_multiple_content_types(ctx: ToolContext) -> ToolResult:
    return ToolResult(
        [{"type": "text", "text": "mixed"}, {"type": "image", "data": PNG, "mimeType": "image/png"}, RESOURCE]
    )
