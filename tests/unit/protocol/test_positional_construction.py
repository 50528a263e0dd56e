"""The per-call objects the hot path builds positionally (a class called with keywords gathers
them into a dict first) carry each value in the field it names: a reordered field would shift
every value after it silently, so each value here is distinct and checked by name."""

from __future__ import annotations

import asyncio

from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol.call import CallContext
from mcp_platform.protocol.context import Services
from mcp_platform.protocol.jsonrpc import Request
from mcp_platform.protocol.preparation import prepare_call
from mcp_platform.protocol.tools import READ_ONLY, ToolCatalog, tool
from mcp_platform.protocol.versions import IDEMPOTENCY_KEY_META, SESSION_HANDLE_ARGUMENT


@tool(description="reads a note", effect=READ_ONLY, session="required")
async def read_note(ctx: object, text: str) -> str:
    return text


def _call() -> CallContext:
    async def notify(message: object) -> None:
        return None

    call = CallContext("alice", "2026-07-28", True, "warning", {"elicitation": {}})
    call.notify = notify
    call.interaction = object()
    return call


def test_the_2026_call_context_keeps_each_value_in_its_field() -> None:
    # Given the call context as the 2026 endpoint builds it, five values by position
    call = CallContext("alice", "2026-07-28", True, "warning", {"elicitation": {}})
    # Then each is in the field it names, and the rest keep their defaults
    assert (call.principal, call.protocol_version, call.modern) == ("alice", "2026-07-28", True)
    assert (call.log_level, call.client_capabilities) == ("warning", {"elicitation": {}})
    assert call.transport is None and isinstance(call.cancelled, asyncio.Event)


def test_a_prepared_call_keeps_each_value_in_its_field() -> None:
    # Given a call with a session handle, a progress token and an idempotency key
    call = _call()
    params = {
        "name": "read_note",
        "arguments": {"text": "hi", SESSION_HANDLE_ARGUMENT: "s" * 32},
        "_meta": {"progressToken": "tok-7", IDEMPOTENCY_KEY_META: "key-1"},
    }
    # When prepared
    prepared = prepare_call(Request("tools/call", params, 1), call, ToolCatalog([read_note]))
    # Then each value is in the field it names
    assert prepared.spec.name == "read_note"
    assert prepared.arguments == {"text": "hi"}  # the handle is the platform's
    assert prepared.session_id == "s" * 32
    assert len(prepared.tool_call_id) == 32 and prepared.tool_call_id != prepared.request_hash
    assert prepared.progress_token == "tok-7"
    assert prepared.request_bytes > 0 and prepared.invalid_arguments is None
    assert len(prepared.request_hash) == 32
    assert prepared.session is None and prepared.prior_result is None and prepared.deadline is None


def test_the_tool_context_keeps_each_value_in_its_field() -> None:
    # Given a prepared call and its call context, every value distinct
    call = _call()
    arguments = {"text": "hi", SESSION_HANDLE_ARGUMENT: "s" * 32}
    params = {"name": "read_note", "arguments": arguments, "_meta": {"progressToken": 9}}
    prepared = prepare_call(Request("tools/call", params, 1), call, ToolCatalog([read_note]))
    services = Services()
    session = object()
    # When the runner builds the tool's context
    ctx = ToolCallRunner(services)._context(prepared, call, session)
    # Then each value is in the field it names, and the per-run collections start empty
    assert ctx.principal == "alice" and ctx.services is services and ctx.session is session
    assert ctx.tool_call_id == prepared.tool_call_id and ctx.progress_token == 9
    assert ctx.log_level == "warning" and ctx.notify is call.notify and ctx.cancelled is call.cancelled
    assert ctx.effect == READ_ONLY and ctx.interaction is call.interaction
    assert ctx.client_capabilities == {"elicitation": {}}
    assert (ctx.context_append, ctx.extra_puts, ctx.condition_checks) == ([], [], [])
    assert ctx.attributes is None and ctx.questions_asked == 0
