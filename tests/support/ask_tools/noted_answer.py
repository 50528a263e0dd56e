"""noted_answer: an append-only session tool that asks the user for a note, then appends it.

``RUNS[tag]`` counts the runs that got their answer, so a test can tell a replayed result from
a second run of the tool.
"""

from __future__ import annotations

from collections import Counter

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.tools import tool

RUNS: Counter[str] = Counter()
NOTE_SCHEMA = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}


@tool(
    description="Test tool: asks for a note (key note), appends it to the session.",
    session="required",
    effect="append_only",
)
async def noted_answer(ctx: ToolContext, tag: str) -> dict[str, object]:
    answer = await ctx.elicit(f"Note for {tag}?", NOTE_SCHEMA, key="note")
    RUNS[tag] += 1
    ctx.append_to_session({"role": "note", "text": str(answer.content.get("note"))})
    return {"note": answer.content.get("note"), "run": RUNS[tag]}
