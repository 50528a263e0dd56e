"""Protocol core without a network: dispatch per era, pagination, schemas, the tool catalog."""

from __future__ import annotations

import asyncio
import importlib
from typing import Annotated, Any, Literal

import pytest

from mcp_platform.application.server import McpServer
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, JsonRpcError, Request, parse_message
from mcp_platform.protocol.request_context import RequestContext, TransportSession
from mcp_platform.protocol.schema import SchemaError, validate
from mcp_platform.protocol.signature import input_schema
from mcp_platform.protocol.tools import ToolCatalog, tool
from tests.support import platform_tools
from tests.support.catalog import EXPECTED_PROMPTS, EXPECTED_RESOURCES, EXPECTED_TEMPLATES, EXPECTED_TOOLS
from tests.support.services import make_services


def call_context(*, modern: bool) -> RequestContext:
    """A fresh context per use: a RequestContext is mutable (bind sets its interaction, the runner
    its notify, a transport its cancelled event), so one shared between tests could carry one
    test's request into another."""
    return RequestContext(principal="p", protocol_version="2026-07-28" if modern else "2025-11-25", modern=modern)


def server(page_size: int = 50) -> McpServer:
    return McpServer(Catalog.discover(platform_tools).tools, ToolCallRunner(make_services()), page_size=page_size)


def handle(srv: McpServer, method: str, params: dict, call: RequestContext) -> dict:
    return asyncio.run(srv.handle(Request(method, params, 1), call))


def test_the_platform_tools_serve_exactly_the_expected_features() -> None:
    """Catalog: a fixed list, so a module that stops being discovered (or a spec that is not
    module-level) fails here; every feature has a description (the platform's own fixture
    package; the starter app's discovery is tests/app's)."""
    catalog = Catalog.discover(platform_tools)
    assert catalog.tools.names() == EXPECTED_TOOLS
    assert {name: t.uri_template for name, t in catalog.templates.items()} == EXPECTED_TEMPLATES
    assert sorted(catalog.prompts) == EXPECTED_PROMPTS and sorted(catalog.resources) == EXPECTED_RESOURCES
    specs = [*(catalog.tools.get(n) for n in EXPECTED_TOOLS), *catalog.resources.values()]
    specs += [*catalog.templates.values(), *catalog.prompts.values()]
    assert all(spec is not None and spec.description for spec in specs)


def test_a_feature_module_without_a_spec_is_reported(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "features_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="defines no tool, resource or prompt"):
        Catalog.discover(importlib.import_module("features_pkg"))


def test_tools_list_pages_follow_the_cursor_in_name_order() -> None:
    """S6: with a page size of 2, following nextCursor yields every tool once, sorted."""
    srv = server(page_size=2)
    names, cursor = [], None
    while True:
        result = handle(srv, "tools/list", {"cursor": cursor} if cursor else {}, call_context(modern=False))
        names += [t["name"] for t in result["tools"]]
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    assert names == sorted(names) == server().catalog.tools.names()


def test_forged_cursor_is_invalid_params() -> None:
    with pytest.raises(JsonRpcError) as caught:
        handle(server(), "tools/list", {"cursor": "Zm9yZ2Vk"}, call_context(modern=False))
    assert caught.value.code == INVALID_PARAMS


@pytest.mark.parametrize(
    ("method", "modern", "exists"),
    [
        ("ping", False, True),
        ("ping", True, False),
        ("logging/setLevel", True, False),
        ("server/discover", True, True),
        ("server/discover", False, False),
    ],
)
def test_method_sets_differ_per_era(method: str, modern: bool, exists: bool) -> None:
    srv = server()
    if exists:
        srv.handler_for(method, modern)
    else:
        with pytest.raises(JsonRpcError) as caught:
            srv.handler_for(method, modern)
        assert caught.value.code == METHOD_NOT_FOUND


def test_the_binding_tells_the_transport_what_a_request_needs() -> None:
    """The transport asks the binding, never the method's name: tools/call may stream; a session
    tool on the request's own transport session validates it with its own read; a call refused
    before that read (unknown tool, bad arguments) leaves the transport's 404 check first."""

    async def note(ctx: object, text: str) -> str:
        return text

    async def plain(ctx: object) -> str:
        return ""

    catalog = ToolCatalog([tool(description="d", session="required")(note), tool(description="d")(plain)])
    srv = McpServer(catalog, ToolCallRunner(make_services()))

    def bind(method: str, params: dict[str, Any], call: RequestContext | None = None) -> Any:
        """Each binding gets its own context: binding sets the context's interaction."""
        if call is None:
            call = RequestContext("p", "2025-11-25", modern=False, transport=TransportSession("s" * 32))
        return srv.bind(Request(method, params, 1), call)

    on_transport_session = bind("tools/call", {"name": "note", "arguments": {"text": "x"}})
    assert on_transport_session.streams and on_transport_session.validates_transport_session
    other_session = {"name": "note", "arguments": {"text": "x", "session": "h" * 32}}
    assert not bind("tools/call", other_session).validates_transport_session
    assert not bind("tools/call", {"name": "note", "arguments": {"text": 1}}).validates_transport_session
    assert not bind("tools/call", {"name": "plain"}).validates_transport_session
    assert not bind("tools/call", {"name": "plain"}, call_context(modern=True)).validates_transport_session
    unknown = bind("tools/call", {"name": "missing"})
    assert not unknown.validates_transport_session
    with pytest.raises(JsonRpcError) as refused:
        asyncio.run(unknown.admit())  # refused only when admitted: after the transport's checks
    assert refused.value.code == INVALID_PARAMS
    listing = bind("tools/list", {})
    assert not listing.streams and not listing.validates_transport_session
    # The headers mirroring the named tool's arguments are checked, even when refused otherwise
    mirrored = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    routed = tool(description="d", explicit_schema=mirrored)(plain)
    with_mirrors = McpServer(ToolCatalog([routed]), ToolCallRunner(make_services()))
    modern = call_context(modern=True)
    bound = with_mirrors.bind(Request("tools/call", {"name": "plain", "arguments": {"region": "eu"}}, 1), modern)
    assert bound.header_mirrors == (("region", "Region"),)
    bad_token = {"name": "plain", "arguments": {}, "_meta": {"progressToken": [1]}}
    refused_call = with_mirrors.bind(Request("tools/call", bad_token, 2), call_context(modern=True))
    assert refused_call.header_mirrors == (("region", "Region"),)
    with pytest.raises(JsonRpcError):
        asyncio.run(refused_call.admit())
    assert on_transport_session.header_mirrors == () and unknown.header_mirrors == () and listing.header_mirrors == ()
    listen = bind("subscriptions/listen", {}, call_context(modern=True))
    assert listen.opens_listen_stream and not listing.opens_listen_stream


def test_modern_results_carry_result_type_and_cache_hints() -> None:
    result = handle(server(), "tools/list", {}, call_context(modern=True))
    assert result["resultType"] == "complete" and result["ttlMs"] > 0 and result["cacheScope"] == "public"
    assert "resultType" not in handle(server(), "tools/list", {}, call_context(modern=False))


def test_tool_schemas_are_identical_in_both_eras() -> None:
    """List results must not vary per connection: one schema, whatever the era."""
    assert (
        handle(server(), "tools/list", {}, call_context(modern=False))["tools"]
        == handle(server(), "tools/list", {}, call_context(modern=True))["tools"]
    )


def test_input_schema_from_type_hints_and_validation() -> None:
    async def sample(
        ctx: object,
        name: Annotated[str, "who"],
        count: int = 1,
        mode: Literal["a", "b"] = "a",
        tags: list[str] | None = None,
    ) -> str:
        return ""

    schema = input_schema(sample)
    assert schema["required"] == ["name"]
    assert schema["properties"]["name"] == {"type": "string", "description": "who"}
    assert schema["properties"]["mode"]["enum"] == ["a", "b"]
    validate({"name": "x", "count": 2, "tags": ["t"]}, schema)
    for bad, path in [
        ({}, "name"),
        ({"name": 1}, "name"),
        ({"name": "x", "count": True}, "count"),
        ({"name": "x", "extra": 1}, "extra"),
        ({"name": "x", "tags": [1]}, "tags[0]"),
    ]:
        with pytest.raises(ValueError, match=path.replace("[", r"\[")):
            validate(bad, schema)


def test_untyped_parameter_and_nameless_lambda_are_refused_at_definition() -> None:
    """A parameter without a type hint has no schema; a lambda has no name to list it under
    (sync functions are tools too: they run in a worker thread)."""

    async def untyped(ctx, value):
        return value

    with pytest.raises(SchemaError):
        input_schema(untyped)
    with pytest.raises(TypeError):
        tool(description="x")(lambda ctx: None)  # type: ignore[arg-type]


def test_duplicate_tool_names_are_refused() -> None:
    echo = importlib.import_module("tests.support.platform_tools.echo").echo
    with pytest.raises(ValueError, match="duplicate"):
        ToolCatalog([echo, echo])


@pytest.mark.parametrize(
    "message",
    [
        [],
        "x",
        {"jsonrpc": "2.0"},
        {"jsonrpc": "2.0", "method": "m", "id": True},
        {"jsonrpc": "2.0", "method": "m", "params": [1]},
    ],
)
def test_parse_message_refuses_malformed_envelopes(message: object) -> None:
    with pytest.raises(JsonRpcError):
        parse_message(message)


@pytest.mark.parametrize(
    ("header", "expected"),
    [("echo", "echo"), ("=?base64?w6ljaG8=?=", "\u00e9cho"), ("=?base64?***?=", None), (None, None)],
)
def test_mcp_name_header_values_decode_base64_form(header: str | None, expected: str | None) -> None:
    """2026-07-28: non-ASCII names travel base64-encoded in Mcp-Name."""
    from mcp_platform.transport.modern import decode_header_value

    assert decode_header_value(header) == expected


@pytest.mark.parametrize(
    ("accept", "json_ok", "sse_ok"),
    [
        ("application/json, text/event-stream", True, True),
        ("application/json", True, False),
        ("*/*", True, True),
        ("application/json, text/event-stream;q=0", True, False),
        ("text/*;q=0.5, application/json", True, True),
        ("", True, False),
        ("application/json;q=0", False, False),  # refused outright: not the same as no Accept
        ("text/event-stream", False, True),
    ],
)
def test_accept_negotiation(accept: str, json_ok: bool, sse_ok: bool) -> None:
    from mcp_platform.transport.messages import HttpRequest

    request = HttpRequest({"method": "POST", "path": "/mcp", "headers": [(b"accept", accept.encode())]})
    assert request.accepts("application/json") is json_ok
    assert request.accepts("text/event-stream") is sse_ok
