"""Scenarios input-required-result-* (2026-07-28 multi-round-trip requests): tools and one prompt
that ask for input with the keys and questions each scenario names.

The tools are written once, with the interactive API: on 2026-07-28 a question becomes an
``InputRequiredResult`` and the tool runs again with the answers; on a 2025 connection the same
question goes out on the call's stream. The scenarios' own checks (tampered or replayed state,
missing or invalid responses, extra keys) are the platform's, not these fixtures'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.interactive import InputRequest, elicitation, roots, sampling
from mcp_platform.protocol.jsonrpc import JSONObject, JSONValue
from mcp_platform.protocol.prompts import prompt, user
from mcp_platform.protocol.tools import tool


def _schema(field: str, kind: str = "string") -> dict[str, Any]:
    return {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}


NAME = _schema("name")


def _content(answer: JSONObject) -> Mapping[str, JSONValue]:
    """An elicitation's raw answer's content (empty when it has none: not accepted)."""
    content = answer.get("content")
    return content if isinstance(content, Mapping) else {}


@tool(description="Ask the user's name (key user_name), then greet them.")
async def test_input_required_result_elicitation(ctx: ToolContext) -> str:
    answer = await ctx.elicit("What is your name?", NAME, key="user_name")
    return f"Hello, {answer.content.get('name', 'stranger') if answer.accepted else 'stranger'}!"


@tool(description="Ask the client's model for the capital of France (key capital_question).")
async def test_input_required_result_sampling(ctx: ToolContext) -> str:
    sampled = await ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
    return f"Model said: {sampled.text if sampled.text is not None else '(no text)'}"


@tool(description="Ask the client for its roots (key client_roots) and list them.")
async def test_input_required_result_list_roots(ctx: ToolContext) -> str:
    found = await ctx.list_roots(key="client_roots")
    return f"Client exposed {len(found)} root(s): {', '.join(str(root['uri']) for root in found) or 'none'}"


async def _confirmed_with_state(ctx: ToolContext) -> str:
    answer = await ctx.elicit("Please confirm", _schema("ok", "boolean"), key="confirm")
    if ctx.round < 2:  # answered without a requestState: nothing was verified
        return f"confirmation received without a requestState (action={answer.action})"
    return f"state-ok: requestState verified in round {ctx.round}, action={answer.action}"


@tool(description="Ask for a confirmation; the retry's requestState is verified (state-ok).")
async def test_input_required_result_request_state(ctx: ToolContext) -> str:
    return await _confirmed_with_state(ctx)


@tool(description="Ask for a confirmation; a tampered requestState on the retry is refused (-32602).")
async def test_input_required_result_tampered_state(ctx: ToolContext) -> str:
    return await _confirmed_with_state(ctx)


@tool(description="Ask three things in one round: a name, a greeting from the model, the client's roots.")
async def test_input_required_result_multiple_inputs(ctx: ToolContext) -> str:
    answers = await ctx.ask_all(
        {
            "user_name": elicitation("What is your name?", NAME),
            "greeting": sampling("Generate a greeting", max_tokens=50),
            "client_roots": roots(),
        }
    )
    name = _content(answers["user_name"]).get("name", "?")
    found = answers["client_roots"]["roots"]  # a list: the answer was checked against roots/list's result
    return f"All inputs received: name={name}, roots={len(found) if isinstance(found, list) else 0}"


@tool(description="Ask in two rounds: step1 (a name), then step2 (a favourite colour).")
async def test_input_required_result_multi_round(ctx: ToolContext) -> str:
    name = await ctx.elicit("Step 1: What is your name?", NAME, key="step1")
    color = await ctx.elicit("Step 2: What is your favorite color?", _schema("color"), key="step2")
    return f"{name.content.get('name')} likes {color.content.get('color')}."


@tool(description="Ask only for what the client declared: sampling and/or elicitation.")
async def test_input_required_result_capabilities(ctx: ToolContext) -> str:
    asks: dict[str, InputRequest] = {}
    if ctx.supports("sampling"):
        asks["sample"] = sampling("Say hello", max_tokens=50)
    if ctx.supports("elicitation"):
        asks["ask"] = elicitation("What is your name?", NAME)
    answers = await ctx.ask_all(asks)
    return f"Answered: {', '.join(sorted(answers)) or 'nothing (no capability declared)'}"


@prompt(description="A prompt that asks the user for its context first (key user_context).")
async def test_input_required_result_prompt(ctx: ToolContext) -> list[dict[str, Any]]:
    answer = await ctx.elicit("What context should the prompt use?", _schema("context"), key="user_context")
    return [user(f"Use the following context: {answer.content.get('context', '?')}")]
