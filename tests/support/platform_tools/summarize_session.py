"""summarize_session: a prompt that hands the model a session's notes to summarise."""

from __future__ import annotations

from typing import Annotated, Any

from mcp_platform import PromptArgumentError, ResourceNotFound, ToolContext, prompt, user

from ._session_views import notes_markdown, read_session

STYLES = ("brief", "detailed", "bullet points", "action items")


async def complete_style(ctx: ToolContext, value: str, arguments: dict[str, Any]) -> list[str]:
    return [style for style in STYLES if style.startswith(value.lower())]


@prompt(
    description="Summarise the notes of one of your sessions in a chosen style.",
    completions={"style": complete_style},
)
async def summarize_session(
    ctx: ToolContext,
    session: Annotated[str, "Session handle from open_session"],
    style: Annotated[str, "brief, detailed, bullet points or action items"] = "brief",
) -> list[dict[str, Any]]:
    try:
        notes = notes_markdown(await read_session(ctx, session))
    except ResourceNotFound as exc:
        raise PromptArgumentError(f"Unknown session: {session}") from exc
    uri = f"session://{session}/notes"
    return [
        user(f"Summarise these session notes ({style}):"),
        user({"type": "resource", "resource": {"uri": uri, "mimeType": "text/markdown", "text": notes}}),
    ]
