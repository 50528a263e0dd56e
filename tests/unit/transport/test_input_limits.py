"""Limits a client meets before anything is stored or an instance is held: body read timeout,
repeated security headers, the client name initialize stores, the call-record budget, and how
long one call may run."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from mcp_platform.adapters.dynamodb.sessions import CallRecordTooLarge
from mcp_platform.application.effects import store_error
from mcp_platform.application.invocation import DEFAULT_MAX_CALL_SECONDS
from mcp_platform.application.sessions.changes import PendingChanges
from mcp_platform.application.sessions.commit_plan import CALL_RECORD_BUDGET_BYTES
from mcp_platform.application.stored_form import STORED_FORM
from mcp_platform.application.tool_calls import LoadedCall, ToolCallRunner
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.handshake import stored_client_name
from mcp_platform.protocol.jsonrpc import INVALID_REQUEST, LIMIT_EXCEEDED, Request
from mcp_platform.protocol.preparation import admit_arguments
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.protocol.storability import Inadmissible
from mcp_platform.protocol.tools import ToolCatalog, tool, tool_spec
from mcp_platform.transport.messages import MAX_JSON_DEPTH, HttpError, HttpRequest, decode_json, read_body
from mcp_platform.transport.security import RequestGuard, check_single_valued
from tests.support import platform_tools
from tests.support.services import make_services

MODERN = RequestContext(principal="p", protocol_version="2026-07-28", modern=True)


def test_f7_a_body_that_stops_arriving_is_408_with_connection_close() -> None:
    """Content-Length promised more than was sent: the read gives up after its timeout."""
    sent = [{"type": "http.request", "body": b"{", "more_body": True}]

    async def receive() -> dict[str, Any]:
        if sent:
            return sent.pop()
        await asyncio.Event().wait()  # the rest never comes
        raise AssertionError("unreachable")

    with pytest.raises(HttpError) as refused:
        asyncio.run(read_body(receive, 1024, "100", timeout_seconds=0.05))
    assert refused.value.status == 408 and refused.value.headers == {"connection": "close"}


def nested_body(levels: int, request_id: object = 3) -> bytes:
    """A request whose body nests ``levels`` deep (the message object is level 1)."""
    arguments = "1"
    for _ in range(levels - 3):  # message, params, arguments hold the rest
        arguments = f"[{arguments}]"
    return f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"params":{{"arguments":{{"x":{arguments}}}}}}}'.encode()


def test_issue26_a_body_nested_past_the_limit_is_400_invalid_request_before_anything_reads_it() -> None:
    """Given bodies nested 65 and 990 levels (990 answered 503: RecursionError downstream), Then
    400 -32600 naming the limit, with the request's id; 64 levels are read."""
    assert decode_json(nested_body(MAX_JSON_DEPTH))["id"] == 3
    for levels in (MAX_JSON_DEPTH + 1, 990):
        with pytest.raises(HttpError) as refused:
            decode_json(nested_body(levels))
        assert refused.value.status == 400 and refused.value.error.code == INVALID_REQUEST
        assert f"{MAX_JSON_DEPTH} levels" in refused.value.error.message and refused.value.request_id == 3


def test_issue26_many_shallow_containers_are_not_deep() -> None:
    """The bracket count only screens: a thousand sibling objects nest 4 levels."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "params": {"items": [{"a": [1]} for _ in range(1000)]}})
    assert len(decode_json(body.encode())["params"]["items"]) == 1000


def test_issue26_a_repeated_key_is_400_invalid_request_naming_it() -> None:
    with pytest.raises(HttpError) as refused:
        decode_json(b'{"jsonrpc":"2.0","id":"r","method":"ping","params":{"x":1,"x":2}}')
    assert refused.value.status == 400 and refused.value.error.code == INVALID_REQUEST
    assert "'x'" in refused.value.error.message and refused.value.request_id == "r"


def request_with(*pairs: tuple[str, str]) -> HttpRequest:
    return HttpRequest({"method": "POST", "path": "/mcp", "headers": [(k.encode(), v.encode()) for k, v in pairs]})


@pytest.mark.parametrize("name", ["Authorization", "Mcp-Session-Id", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"])
def test_f5_a_repeated_single_valued_header_is_400(name: str) -> None:
    with pytest.raises(HttpError) as refused:
        check_single_valued(request_with((name, "a"), (name, "a")))
    assert refused.value.status == 400 and name.lower() in str(refused.value)
    check_single_valued(request_with((name, "a")))  # once is fine


@pytest.mark.parametrize("name", ["Host", "Origin"])
def test_f5_a_repeated_host_or_origin_is_403(name: str) -> None:
    guard = RequestGuard(("good.example",), ("http://good.example",))
    value = "good.example" if name == "Host" else "http://good.example"
    with pytest.raises(HttpError) as refused:
        guard.check(request_with(("host", "good.example"), (name, value), (name, value)))
    assert refused.value.status == 403


@pytest.mark.parametrize(
    ("client_info", "path"),
    [("x", "params.clientInfo"), ({"name": 7}, "params.clientInfo.name"), ({"name": "x\ud800"}, "clientInfo.name")],
)
def test_f2_initialize_stores_only_a_well_formed_client_name(client_info: Any, path: str) -> None:
    with pytest.raises(Inadmissible, match=path.replace(".", r"\.")):
        stored_client_name(client_info, STORED_FORM)
    assert stored_client_name({"name": "n" * 500}, STORED_FORM) == "n" * 200
    assert stored_client_name(None, STORED_FORM) == ""


def test_f3_arguments_over_the_call_record_budget_name_the_largest_argument() -> None:
    arguments = {"text": "x" * CALL_RECORD_BUDGET_BYTES, "session": "h"}
    with pytest.raises(Inadmissible) as refused:
        admit_arguments(arguments, STORED_FORM, CALL_RECORD_BUDGET_BYTES)
    assert refused.value.path == "arguments.text" and str(CALL_RECORD_BUDGET_BYTES) in str(refused.value)
    assert admit_arguments({"text": "x" * 1000}, STORED_FORM, CALL_RECORD_BUDGET_BYTES) < CALL_RECORD_BUDGET_BYTES


def test_f3_a_call_record_over_the_budget_is_limit_exceeded_naming_it() -> None:
    error = store_error(CallRecordTooLarge("c1", CALL_RECORD_BUDGET_BYTES, CALL_RECORD_BUDGET_BYTES + 1))
    assert error.code == LIMIT_EXCEEDED and error.data["limit"] == "call_record_bytes"
    assert error.data["bytes"] == CALL_RECORD_BUDGET_BYTES


async def _forever(ctx: ToolContext) -> str:
    ctx.append_to_session({"text": "queued before the stop"})
    await asyncio.Event().wait()
    return "never"


def _run(decorated: Any, runner: ToolCallRunner, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    spec = tool_spec(decorated)
    catalog = ToolCatalog([spec])
    params = {"name": spec.name, "arguments": arguments or {}}
    prepared = runner.prepare(Request("tools/call", params, 1), MODERN, catalog)
    return asyncio.run(runner.run(LoadedCall(prepared), MODERN))


def test_f8_a_tool_is_stopped_at_its_declared_max_seconds() -> None:
    spec = tool(description="d", max_seconds=0.05)(_forever)
    result = _run(spec, ToolCallRunner(make_services()))
    assert result["isError"] and "0.05 s limit (max_seconds)" in result["content"][0]["text"]


def test_f8_an_undeclared_tool_is_bounded_by_the_stream_cap_and_a_declared_one_too() -> None:
    runner = ToolCallRunner(make_services(), max_call_seconds=0.05)
    result = _run(tool(description="d")(_forever), runner)
    assert result["isError"] and "0.05 s limit" in result["content"][0]["text"]
    assert runner.call_limit(tool_spec(tool(description="d", max_seconds=600)(_forever))) == 0.05
    assert (
        ToolCallRunner(make_services()).call_limit(tool_spec(tool(description="d")(_forever)))
        == DEFAULT_MAX_CALL_SECONDS
    )


def test_f8_a_stopped_call_commits_none_of_what_it_queued() -> None:
    """The stop is answered like a ToolError, minus the effects the half-run tool queued."""
    spec = tool(description="d", max_seconds=0.05)(_forever)
    runner = ToolCallRunner(make_services())
    pending = PendingChanges("append_only")
    ctx = ToolContext(principal="p", services=make_services(), effects=pending)
    prepared = runner.prepare(Request("tools/call", {"name": "_forever"}, 1), MODERN, ToolCatalog([spec]))
    result = asyncio.run(runner._invoke(prepared, ctx))
    assert result["isError"] and pending.context_append == []


def _slow_sync(ctx: ToolContext, seconds: float) -> str:
    time.sleep(seconds)  # a plain def: the runner cannot interrupt its worker thread
    ctx.append_to_session({"text": "queued by the worker thread"})
    return "done"


def test_f8_a_sync_tool_stopped_at_its_limit_commits_nothing_its_thread_queues_afterwards() -> None:
    """A stop cannot interrupt a worker thread: the tool runs on and queues an effect after the
    stop was answered. What the commit reads (the call's context) must not receive it."""
    spec = tool_spec(tool(description="d", max_seconds=0.05)(_slow_sync))
    runner = ToolCallRunner(make_services())
    pending = PendingChanges("append_only")
    ctx = ToolContext(principal="p", services=make_services(), effects=pending)
    params = {"name": "_slow_sync", "arguments": {"seconds": 0.3}}
    prepared = runner.prepare(Request("tools/call", params, 1), MODERN, ToolCatalog([spec]))

    async def stopped_then_thread_finishes() -> dict[str, Any]:
        result = await runner._invoke(prepared, ctx)
        await asyncio.sleep(0.6)  # the thread wakes up and appends meanwhile
        return result

    result = asyncio.run(stopped_then_thread_finishes())
    assert result["isError"] and "0.05 s limit" in result["content"][0]["text"]
    assert pending.context_append == []


def test_a_sync_tool_that_returns_in_time_has_its_effects_committed() -> None:
    spec = tool_spec(tool(description="d")(_slow_sync))
    runner = ToolCallRunner(make_services())
    pending = PendingChanges("append_only")
    ctx = ToolContext(principal="p", services=make_services(), effects=pending)
    params = {"name": "_slow_sync", "arguments": {"seconds": 0}}
    prepared = runner.prepare(Request("tools/call", params, 1), MODERN, ToolCatalog([spec]))
    result = asyncio.run(runner._invoke(prepared, ctx))
    assert result["structuredContent"] == {"result": "done"}
    assert pending.context_append == [{"text": "queued by the worker thread"}]


@pytest.mark.parametrize("max_seconds", [0, -1, 901])
def test_f8_max_seconds_must_be_positive_and_within_lambdas_timeout(max_seconds: float) -> None:
    with pytest.raises(TypeError, match="max_seconds"):
        tool(description="d", max_seconds=max_seconds)(_forever)


def test_f8_countdown_declares_a_limit_far_below_the_cap_and_refuses_work_past_it() -> None:
    """100 steps x 10 s was 1,000 s of work against the 840 s cap; refused before any step."""
    spec = Catalog.discover(platform_tools).tools.get("countdown")
    assert spec is not None and spec.max_seconds is not None and spec.max_seconds <= 120
    result = _run(spec, ToolCallRunner(make_services()), {"steps": 100, "interval_ms": 10_000})
    assert result["isError"] and "max_seconds" in result["content"][0]["text"]


def test_f7_the_body_timeout_bounds_the_whole_body_not_each_chunk() -> None:
    """A client dripping chunks, each well within the timeout, is still cut off once the whole
    body has taken longer than it."""

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(0.02)
        return {"type": "http.request", "body": b" ", "more_body": True}  # never the last chunk

    with pytest.raises(HttpError) as refused:
        asyncio.run(read_body(receive, 1024, None, timeout_seconds=0.1))
    assert refused.value.status == 408


def test_f7_a_buffered_body_is_read_without_a_timeout() -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    assert asyncio.run(read_body(receive, 1024, "2", timeout_seconds=None)) == b"{}"
