"""Resources, resource templates, prompts and completion through the protocol core (no network)."""

from __future__ import annotations

import asyncio
import base64
from enum import Enum
from typing import Annotated, Any

import pytest

from mcp_platform.application.server import McpServer
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, JsonRpcError, Request
from mcp_platform.protocol.prompts import prompt, user
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.protocol.resources import ResourceNotFound, compile_template, resource, resource_template
from tests.support.services import make_services

LEGACY = RequestContext(principal="p", protocol_version="2025-11-25", modern=False)
MODERN = RequestContext(principal="p", protocol_version="2026-07-28", modern=True)


@resource(uri="test://text", description="Plain text.", mime_type="text/plain")
async def text_resource(ctx: ToolContext) -> str:
    return "hello"


@resource(uri="test://binary", description="A PNG.", mime_type="image/png")
async def binary_resource(ctx: ToolContext) -> bytes:
    return b"\x89PNG"


async def complete_id(ctx: ToolContext, value: str, arguments: dict[str, Any]) -> list[str]:
    return [i for i in ("alpha", "alpine", "beta") if i.startswith(value)]


@resource_template(uri_template="test://items/{id}/data", description="An item.", completions={"id": complete_id})
async def item(ctx: ToolContext, id: str) -> str:
    if id == "missing":
        raise ResourceNotFound(id)
    return f"item {id}"


async def complete_topic(ctx: ToolContext, value: str, arguments: dict[str, Any]) -> list[str]:
    return [f"{value}-{n}" for n in range(150)]


@prompt(description="Greets.", completions={"topic": complete_topic})
async def greet(
    ctx: ToolContext, name: Annotated[str, "Who"], topic: Annotated[str, "About what"] = "weather"
) -> list[dict[str, Any]]:
    return [user(f"Hello {name}, about {topic}")]


def server(*specs: Any) -> McpServer:
    return McpServer(Catalog.of(specs), ToolCallRunner(make_services()))


def handle(srv: McpServer, method: str, params: dict[str, Any], call: RequestContext) -> dict[str, Any]:
    return asyncio.run(srv.handle(Request(method, params, 1), call))


FULL = (text_resource, binary_resource, item, greet)


def test_capabilities_follow_what_is_registered() -> None:
    """Nothing is advertised that is not served: no resources, prompts or completers → none."""
    assert set(server().capabilities(modern=True)) == {"tools"}
    assert set(server(*FULL).capabilities(modern=True)) == {"tools", "resources", "prompts", "completions"}
    with pytest.raises(JsonRpcError) as missing:
        handle(server(), "resources/list", {}, MODERN)
    assert missing.value.code == METHOD_NOT_FOUND


def test_resources_are_listed_and_read_as_text_and_base64_blob() -> None:
    srv = server(*FULL)
    listed = handle(srv, "resources/list", {}, MODERN)
    assert [r["uri"] for r in listed["resources"]] == ["test://binary", "test://text"] and listed["ttlMs"] > 0
    text = handle(srv, "resources/read", {"uri": "test://text"}, LEGACY)["contents"]
    assert text == [{"uri": "test://text", "mimeType": "text/plain", "text": "hello"}]
    modern = handle(srv, "resources/read", {"uri": "test://text"}, MODERN)
    assert (modern["ttlMs"], modern["cacheScope"]) == (0, "private")  # 2026 caching hints, safe default
    blob = handle(srv, "resources/read", {"uri": "test://binary"}, LEGACY)["contents"][0]
    assert base64.b64decode(blob["blob"]) == b"\x89PNG" and blob["mimeType"] == "image/png"


def test_templates_match_rfc6570_variables_and_unknown_uris_are_era_specific_errors() -> None:
    srv = server(*FULL)
    (listed,) = handle(srv, "resources/templates/list", {}, LEGACY)["resourceTemplates"]
    assert listed["uriTemplate"] == "test://items/{id}/data"
    read = handle(srv, "resources/read", {"uri": "test://items/a%20b/data"}, LEGACY)["contents"]
    assert read[0]["text"] == "item a b"
    for uri in ("test://items/x/y/data", "test://nothing", "test://items/missing/data"):
        with pytest.raises(JsonRpcError) as modern:
            handle(srv, "resources/read", {"uri": uri}, MODERN)
        assert modern.value.code == INVALID_PARAMS and modern.value.data == {"uri": uri}
        with pytest.raises(JsonRpcError) as legacy:
            handle(srv, "resources/read", {"uri": uri}, LEGACY)
        assert legacy.value.code == RESOURCE_NOT_FOUND and legacy.value.data == {"uri": uri}


def test_reserved_expansion_spans_slashes() -> None:
    pattern, names = compile_template("file:///{+path}")
    found = pattern.fullmatch("file:///a/b/c.txt")
    assert names == ("path",) and found is not None and found["path"] == "a/b/c.txt"


def test_prompts_list_and_get_with_declared_arguments() -> None:
    srv = server(*FULL)
    (listed,) = handle(srv, "prompts/list", {}, LEGACY)["prompts"]
    assert listed["arguments"] == [
        {"name": "name", "required": True, "description": "Who"},
        {"name": "topic", "required": False, "description": "About what"},
    ]
    got = handle(srv, "prompts/get", {"name": "greet", "arguments": {"name": "Ann"}}, LEGACY)
    assert got["messages"] == [{"role": "user", "content": {"type": "text", "text": "Hello Ann, about weather"}}]
    for params in ({"name": "greet"}, {"name": "greet", "arguments": {"name": "A", "x": "1"}}, {"name": "nope"}):
        with pytest.raises(JsonRpcError) as refused:
            handle(srv, "prompts/get", params, LEGACY)
        assert refused.value.code == INVALID_PARAMS


def test_completion_for_prompt_arguments_and_template_variables() -> None:
    srv = server(*FULL)
    by_template = {
        "ref": {"type": "ref/resource", "uri": "test://items/{id}/data"},
        "argument": {"name": "id", "value": "al"},
    }
    assert handle(srv, "completion/complete", by_template, LEGACY)["completion"]["values"] == ["alpha", "alpine"]
    by_prompt = {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "topic", "value": "t"}}
    completion = handle(srv, "completion/complete", by_prompt, MODERN)["completion"]
    assert len(completion["values"]) == 100 and completion["total"] == 150 and completion["hasMore"] is True
    no_completer = {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": ""}}
    assert handle(srv, "completion/complete", no_completer, LEGACY)["completion"]["values"] == []
    with pytest.raises(JsonRpcError) as unknown:
        handle(srv, "completion/complete", {**by_prompt, "ref": {"type": "ref/prompt", "name": "nope"}}, LEGACY)
    assert unknown.value.code == INVALID_PARAMS


@pytest.mark.parametrize(
    "malformed",
    [
        {"context": {"arguments": 5}},
        {"context": {"arguments": "ab"}},
        {"context": {"arguments": [1, 2]}},
        {"context": {"arguments": {"name": None}}},
        {"context": 7},
        {"argument": {"name": "topic", "value": ["t"]}},
        {"ref": {"type": "ref/resource", "uri": 3}},
        {"ref": {"type": "ref/prompt"}},
        {"ref": {"type": 1}},
    ],
)
def test_issue26_every_malformed_completion_field_is_invalid_params(malformed: dict[str, Any]) -> None:
    """context.arguments 5, "ab" or [1, 2] raised TypeError/ValueError (-32603): each malformed
    field is now -32602 naming it, in both eras; nothing is coerced (a list value is not str()ed)."""
    params = {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "topic", "value": "t"}, **malformed}
    for call in (LEGACY, MODERN):
        with pytest.raises(JsonRpcError) as refused:
            handle(server(*FULL), "completion/complete", params, call)
        assert refused.value.code == INVALID_PARAMS and "params." in refused.value.message


def test_2026_results_identify_the_server() -> None:
    result = handle(server(*FULL), "resources/list", {}, MODERN)
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-platform"
    assert "_meta" not in handle(server(*FULL), "resources/list", {}, LEGACY)


SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"city": {"type": "string"}}}},
    "properties": {"address": {"$ref": "#/$defs/address"}, "contact": {"enum": ["phone", "email"]}},
    "if": {"properties": {"contact": {"const": "phone"}}, "required": ["contact"]},
    "then": {"required": ["phone"]},
    "additionalProperties": True,
}


def test_a_hand_written_2020_12_schema_is_served_intact_and_enforced() -> None:
    from mcp_platform.protocol.tools import tool, tool_spec

    async def contact(ctx: ToolContext, **_: Any) -> str:
        return "ok"

    spec = tool_spec(tool(description="d", explicit_schema=SCHEMA_2020_12)(contact))
    (listed,) = handle(server(spec), "tools/list", {}, MODERN)["tools"]
    assert listed["inputSchema"] == SCHEMA_2020_12
    spec.validate_arguments({"contact": "email", "address": {"city": "Oslo"}})
    with pytest.raises(ValueError, match="'phone' is a required property"):
        spec.validate_arguments({"contact": "phone"})
    with pytest.raises(ValueError, match=r"arguments\.address\.city"):
        spec.validate_arguments({"address": {"city": 7}})


def test_a_tool_needing_an_undeclared_client_capability_is_refused_with_32021() -> None:
    from mcp_platform.protocol.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY
    from mcp_platform.protocol.tools import tool

    async def asks(ctx: ToolContext) -> str:
        return "ran"

    spec = tool(description="d", requires_client={"sampling": {}})(asks)
    srv = server(spec)
    undeclared = RequestContext(principal="p", protocol_version="2026-07-28", modern=True, declared_capabilities={})
    with pytest.raises(JsonRpcError) as refused:
        handle(srv, "tools/call", {"name": "asks"}, undeclared)
    assert refused.value.code == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert refused.value.data == {"requiredCapabilities": {"sampling": {}}}
    declared = RequestContext(
        principal="p", protocol_version="2026-07-28", modern=True, declared_capabilities={"sampling": {}}
    )
    assert handle(srv, "tools/call", {"name": "asks"}, declared)["content"][0]["text"] == "ran"


class Shade(Enum):
    LIGHT = "light"
    DARK = "dark"


@resource("test://shades/{shade}/{count}", mime_type="application/json")
def shades(shade: Shade, count: int) -> dict[str, Any]:
    """Shades, as JSON data (a sync function without a context)."""
    return {"shade": shade.value, "twice": count * 2}


@resource("test://whoami")
async def whoami(caller: ToolContext) -> str:
    return caller.principal


@prompt
def paint(caller: ToolContext, colour: Shade, coats: int = 1, glossy: bool = False) -> list[str]:
    """Ask for a paint job."""
    return [f"{caller.principal}: {coats} {'glossy ' if glossy else ''}coat(s) of {colour.value}", "Thanks."]


def test_sdk_style_resources_and_prompts_read_docstrings_contexts_and_typed_arguments() -> None:
    """Given sync functions, docstring descriptions, a context under another name and typed
    template variables and prompt arguments, when they are listed, read and got, then the
    strings of the wire reach them converted, and JSON data is served as JSON text."""
    srv = server(shades, whoami, paint)
    (template,) = handle(srv, "resources/templates/list", {}, MODERN)["resourceTemplates"]
    assert template["description"] == "Shades, as JSON data (a sync function without a context)."
    read = handle(srv, "resources/read", {"uri": "test://shades/dark/21"}, MODERN)["contents"]
    assert read == [
        {"uri": "test://shades/dark/21", "mimeType": "application/json", "text": '{"shade":"dark","twice":42}'}
    ]
    assert handle(srv, "resources/read", {"uri": "test://whoami"}, LEGACY)["contents"][0]["text"] == "p"
    (listed,) = handle(srv, "prompts/list", {}, MODERN)["prompts"]
    assert listed["description"] == "Ask for a paint job." and [a["name"] for a in listed["arguments"]] == [
        "colour",
        "coats",
        "glossy",
    ]
    got = handle(
        srv, "prompts/get", {"name": "paint", "arguments": {"colour": "light", "coats": "2", "glossy": "true"}}, LEGACY
    )
    assert [m["content"]["text"] for m in got["messages"]] == ["p: 2 glossy coat(s) of light", "Thanks."]


@pytest.mark.parametrize(
    ("method", "params", "named"),
    [
        ("resources/read", {"uri": "test://shades/grey/1"}, "{shade}: 'grey' is not one of"),
        ("resources/read", {"uri": "test://shades/dark/many"}, "{count}: 'many' is not an integer"),
        ("prompts/get", {"name": "paint", "arguments": {"colour": "dark", "coats": "x"}}, "argument coats: 'x'"),
        ("prompts/get", {"name": "paint", "arguments": {"colour": "dark", "glossy": "maybe"}}, "argument glossy"),
    ],
)
@pytest.mark.parametrize("call", [LEGACY, MODERN])
def test_a_string_its_declared_type_refuses_is_invalid_params_naming_it(
    method: str, params: dict[str, Any], named: str, call: RequestContext
) -> None:
    with pytest.raises(JsonRpcError) as refused:
        handle(server(shades, paint), method, params, call)
    assert refused.value.code == INVALID_PARAMS and named in refused.value.message


def test_a_template_whose_variables_are_not_its_arguments_is_refused_at_definition() -> None:
    def wrong(ctx: ToolContext, other: str) -> str:
        return other

    def fixed_with_argument(value: str) -> str:
        return value

    with pytest.raises(TypeError, match=r"variables \['id'\] must be the function's arguments, which are \['other'\]"):
        resource_template("test://x/{id}")(wrong)
    with pytest.raises(TypeError, match="has no URI variables"):
        resource("test://fixed")(fixed_with_argument)
    with pytest.raises(TypeError, match="needs its URI"):
        resource(fixed_with_argument)  # type: ignore[arg-type]


def test_extensions_given_to_the_server_are_advertised_beside_the_tasks_extension_in_2026_only() -> None:
    # Given the tasks extension served and the OAuth client-credentials extension on
    from types import SimpleNamespace

    from mcp_platform.application.auth.base import CLIENT_CREDENTIALS_EXTENSION
    from mcp_platform.protocol.tasks import EXTENSION_ID as TASKS

    async def method(request: Any, call: Any) -> dict[str, Any]:
        return {}

    tasks = SimpleNamespace(get=method, update=method, cancel=method)
    services = make_services(tasks=tasks)  # type: ignore[arg-type]
    srv = McpServer(Catalog.of([]), ToolCallRunner(services), extensions={CLIENT_CREDENTIALS_EXTENSION: {}})
    # Then 2026 capabilities name both; the 2025 wire has no extensions field
    assert srv.capabilities(modern=True)["extensions"] == {TASKS: {}, CLIENT_CREDENTIALS_EXTENSION: {}}
    assert "extensions" not in srv.capabilities(modern=False)
