"""Scenarios prompts-list, prompts-get-simple, -with-args, -embedded-resource, -with-image and
completion-complete (a prompt argument): each prompt returns the messages its scenario shows."""

from __future__ import annotations

from typing import Annotated, Any

from examples.conformance._media import PNG_BASE64
from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.prompts import prompt, user

WORDS = ("paris", "park", "party", "test", "testing")


async def complete_word(ctx: ToolContext, value: str, arguments: dict[str, Any]) -> list[str]:
    return [word for word in WORDS if word.startswith(value)]


@prompt(description="A simple prompt without arguments.")
async def test_simple_prompt(ctx: ToolContext) -> str:
    return "This is a simple prompt for testing."


@prompt(description="A prompt with two required arguments.", completions={"arg1": complete_word})
async def test_prompt_with_arguments(
    ctx: ToolContext, arg1: Annotated[str, "First test argument"], arg2: Annotated[str, "Second test argument"]
) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@prompt(description="A prompt embedding the resource it is given.")
async def test_prompt_with_embedded_resource(
    ctx: ToolContext, resourceUri: Annotated[str, "URI of the resource to embed"]
) -> list[dict[str, Any]]:
    embedded = {"uri": resourceUri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}
    return [user({"type": "resource", "resource": embedded}), user("Please process the embedded resource above.")]


@prompt(description="A prompt with an image.")
async def test_prompt_with_image(ctx: ToolContext) -> list[dict[str, Any]]:
    return [
        user({"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}),
        user("Please analyze the image above."),
    ]
