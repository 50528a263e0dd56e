"""Scenarios tools-call-sampling, tools-call-elicitation, elicitation-sep1034-defaults,
elicitation-sep1330-enums (2025 revisions: requests on the call's SSE stream) and server-stateless
(2026: an elicitation travels as an InputRequiredResult, never as a request on the stream).

The same tool code serves both wires (``ctx.elicit``/``ctx.sample``); a client without the
capability a tool needs is refused with -32021, as the scenarios ask ("return an error").
"""

from __future__ import annotations

import json
from typing import Any

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.tools import tool

USER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

DEFAULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}

ENUMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}

CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "Go on?"}},
    "required": ["confirm"],
}


def _content(content: dict[str, Any]) -> str:
    return json.dumps(content, sort_keys=True, separators=(",", ":"))


@tool(description="Ask the client's model to answer the prompt (sampling/createMessage, maxTokens 100).")
async def test_sampling(ctx: ToolContext, prompt: str) -> str:
    sampled = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {sampled.text if sampled.text is not None else '(no text)'}"


@tool(description="Ask the user for a username and an email (elicitation/create) and echo the answer.")
async def test_elicitation(ctx: ToolContext, message: str) -> str:
    answer = await ctx.elicit(message, USER_SCHEMA)
    return f"User response: action={answer.action}, content={_content(answer.content)}"


@tool(description="Elicit a form whose every primitive field has a default value (SEP-1034).")
async def test_elicitation_sep1034_defaults(ctx: ToolContext) -> str:
    answer = await ctx.elicit("Please review and update the form fields with defaults", DEFAULTS_SCHEMA)
    return f"Elicitation completed: action={answer.action}, content={_content(answer.content)}"


@tool(description="Elicit a form with the five enum variants of SEP-1330.")
async def test_elicitation_sep1330_enums(ctx: ToolContext) -> str:
    answer = await ctx.elicit("Please select options from the enum fields", ENUMS_SCHEMA)
    return f"Elicitation completed: action={answer.action}, content={_content(answer.content)}"


@tool(description="Ask for a confirmation mid-call: 2026 answers InputRequiredResult, 2025 asks on the stream.")
async def test_streaming_elicitation(ctx: ToolContext) -> str:
    answer = await ctx.elicit("Continue with the streaming operation?", CONFIRM_SCHEMA, key="confirm")
    return f"Streaming elicitation completed: action={answer.action}, content={_content(answer.content)}"
