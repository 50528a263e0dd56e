"""Scenarios tasks-* (the tasks extension, SEP-2663): task tools run by the task worker.

``slow_compute`` is optional (a task for a client that declared the extension, a plain call
otherwise); the others are required. Each waits on ``ctx.cancelled`` rather than sleeping
blindly, so a ``tasks/cancel`` stops it within the worker's cancel check.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.interactive import InputRequest, elicitation
from mcp_platform.protocol.jsonrpc import JSONObject, JSONValue
from mcp_platform.protocol.tools import ToolError, tool


def _schema(field: str, kind: str) -> dict[str, Any]:
    return {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}


async def _pause(ctx: ToolContext, seconds: float) -> bool:
    """Wait ``seconds``, or less if the task is cancelled; True when it was."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(ctx.cancelled.wait(), seconds)
    return ctx.cancelled.is_set()


@tool(description="Say hello (a plain call: never a task).")
async def greet(ctx: ToolContext, name: str) -> str:
    return f"Hello, {name}!"


@tool(description="Sleep for `seconds`, then report `label` (a task when the client supports it).", task="optional")
async def slow_compute(ctx: ToolContext, seconds: float, label: str = "") -> str:
    if await _pause(ctx, seconds):
        return f"{label}: cancelled"
    return f"{label}: computed after {seconds:g} s"


@tool(description="Fail as a tool (isError) after a second.", task="required")
async def failing_job(ctx: ToolContext) -> str:
    await _pause(ctx, 1)
    raise ToolError("failing_job failed, as it always does")


@tool(description="Fail with a protocol-level error after half a second.", task="required")
async def protocol_error_job(ctx: ToolContext) -> str:
    await _pause(ctx, 0.5)
    raise RuntimeError("protocol_error_job crashed")  # an internal failure: the task is failed


@tool(description="Ask whether to delete `filename`, then report the decision.", task="required")
async def confirm_delete(ctx: ToolContext, filename: str) -> str:
    answer = await ctx.elicit(f"Delete '{filename}'?", _schema("confirm", "boolean"), key="confirm")
    confirmed = answer.accepted and bool(answer.content.get("confirm"))
    return f"{filename}: {'deleted' if confirmed else 'kept'}"


@tool(description="Ask for a name and a confirmation at once, then report both.", task="required")
async def multi_input(ctx: ToolContext) -> str:
    answers = await ctx.ask_all(
        {
            "name": elicitation("Your name?", _schema("name", "string")),
            "confirm": elicitation("Proceed?", _schema("confirm", "boolean")),
        }
    )
    name = _content(answers["name"]).get("name", "?")
    return f"{name}: confirm={_content(answers['confirm']).get('confirm')}"


def _content(answer: JSONObject) -> Mapping[str, JSONValue]:
    """An elicitation's raw answer's content (empty when it has none: not accepted)."""
    content = answer.get("content")
    return content if isinstance(content, Mapping) else {}


def _ask_name() -> dict[str, InputRequest]:
    return {"user_name": elicitation("What is your name?", _schema("name", "string"))}


@tool(description="Ask the user's name before the task starts, then greet them from the task.", task="required",
      ask_first=_ask_name)  # fmt: skip
async def test_tool_with_task(ctx: ToolContext) -> str:
    answer = await ctx.elicit("What is your name?", _schema("name", "string"), key="user_name")
    return f"Hello, {answer.content.get('name', 'stranger')}! (computed in task)"
