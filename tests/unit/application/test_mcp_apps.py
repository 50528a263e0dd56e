"""MCP Apps (``io.modelcontextprotocol/ui``): a tool names a ``ui://`` view, the view is served as
``text/html;profile=mcp-app`` with its sandbox metadata, and the extension is advertised only when
a view is served, in both eras. Through the protocol core, no network; the official SDK's own
``Apps`` extension is the oracle for the wire shape."""

from __future__ import annotations

import asyncio
import importlib
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import anyio
import pytest

from mcp_platform import ResourceCsp, ResourcePermissions, resource, resource_template, tool, ui_resource
from mcp_platform.application.server import McpServer
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.jsonrpc import Request
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.protocol.tasks import EXTENSION_ID as TASKS_EXTENSION
from tests.support.services import make_services

LEGACY = RequestContext(principal="p", protocol_version="2025-11-25", modern=False)
MODERN = RequestContext(principal="p", protocol_version="2026-07-28", modern=True)
DASHBOARD = "ui://dashboard/app.html"
DASHBOARD_HTML = "<!doctype html><title>Dashboard</title><canvas id='chart'></canvas>"
DASHBOARD_META = {
    "ui": {
        "csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://cdn.example.com"]},
        "permissions": {"clipboardWrite": {}},
        "domain": "dashboard.example.com",
        "prefersBorder": True,
    }
}


@tool(ui=DASHBOARD)
def show_dashboard() -> str:
    """Show the dashboard."""
    return "The dashboard shows 3 series."


@tool(ui=DASHBOARD, visibility=["app"])
def refresh_dashboard() -> str:
    """Refresh the dashboard data (called by the view, not by the model)."""
    return "refreshed"


@tool
def plain() -> str:
    """No view."""
    return "text"


@ui_resource(
    DASHBOARD,
    title="Dashboard",
    csp=ResourceCsp(connect_domains=["https://api.example.com"], resource_domains=["https://cdn.example.com"]),
    permissions=ResourcePermissions(clipboard_write=True),
    domain="dashboard.example.com",
    prefers_border=True,
)
def dashboard() -> str:
    """The dashboard's page."""
    return DASHBOARD_HTML


@resource("test://readme", mime_type="text/plain")
def readme() -> str:
    """Not a view."""
    return "hello"


APP = (show_dashboard, refresh_dashboard, plain, dashboard, readme)


def server(*features: Any, services: Any = None) -> McpServer:
    return McpServer(Catalog.of(features), ToolCallRunner(services or make_services()))


def handle(srv: McpServer, method: str, params: dict[str, Any], call: RequestContext) -> dict[str, Any]:
    return asyncio.run(srv.handle(Request(method, params, 1), call))


def initialize_capabilities(srv: McpServer) -> dict[str, Any]:
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    capabilities: dict[str, Any] = srv.initialize(Request("initialize", params, 1)).result["capabilities"]
    return capabilities


@pytest.mark.parametrize("call", [LEGACY, MODERN], ids=["2025", "2026"])
def test_a_tool_names_its_view_in_its_listing(call: RequestContext) -> None:
    """Given tools with a view (one the view alone may call) and one without, when they are
    listed, then each with a view carries _meta.ui.resourceUri (and the visibility declared) and
    the other carries no _meta."""
    listed = {entry["name"]: entry for entry in handle(server(*APP), "tools/list", {}, call)["tools"]}
    assert listed["show_dashboard"]["_meta"] == {"ui": {"resourceUri": DASHBOARD}}
    assert listed["refresh_dashboard"]["_meta"] == {"ui": {"resourceUri": DASHBOARD, "visibility": ["app"]}}
    assert "_meta" not in listed["plain"]


@pytest.mark.parametrize("call", [LEGACY, MODERN], ids=["2025", "2026"])
def test_a_view_is_listed_and_read_as_an_app_with_its_sandbox_metadata(call: RequestContext) -> None:
    """Given a view declared with its CSP origins, a permission, a domain and a border, when
    resources are listed and the view is read, then both carry the app MIME type and the same
    _meta.ui (camelCase, as the host reads it); a plain resource carries neither."""
    srv = server(*APP)
    listed = {entry["uri"]: entry for entry in handle(srv, "resources/list", {}, call)["resources"]}
    assert listed[DASHBOARD]["mimeType"] == APP_MIME_TYPE and listed[DASHBOARD]["_meta"] == DASHBOARD_META
    assert "_meta" not in listed["test://readme"]
    (read,) = handle(srv, "resources/read", {"uri": DASHBOARD}, call)["contents"]
    assert read == {"uri": DASHBOARD, "mimeType": APP_MIME_TYPE, "text": DASHBOARD_HTML, "_meta": DASHBOARD_META}


def test_the_wire_shape_is_what_the_sdk_serves_for_the_same_declaration() -> None:
    """Given the same tools and view declared with the official SDK's Apps extension, when its
    in-memory client lists and reads them, then the tools' _meta, the view's MIME type and its
    _meta (listed and read) are ours, key for key."""
    from mcp import Client
    from mcp.server.apps import Apps
    from mcp.server.apps import ResourceCsp as SdkCsp
    from mcp.server.apps import ResourcePermissions as SdkPermissions
    from mcp.server.mcpserver import MCPServer

    apps = Apps()
    apps.tool(resource_uri=DASHBOARD)(show_dashboard)
    apps.tool(resource_uri=DASHBOARD, visibility=["app"])(refresh_dashboard)
    apps.add_html_resource(
        DASHBOARD,
        DASHBOARD_HTML,
        title="Dashboard",
        csp=SdkCsp(connect_domains=["https://api.example.com"], resource_domains=["https://cdn.example.com"]),
        permissions=SdkPermissions(clipboard_write={}),
        domain="dashboard.example.com",
        prefers_border=True,
    )
    sdk: dict[str, Any] = {}

    async def sdk_side() -> None:
        async with Client(MCPServer("oracle", extensions=[apps]), mode="2026-07-28") as client:
            sdk["tools"] = {t.name: t.meta for t in (await client.list_tools()).tools}
            (listed,) = (await client.list_resources()).resources
            sdk["listed"] = listed.model_dump(by_alias=True, exclude_none=True)
            (read,) = (await client.read_resource(DASHBOARD)).contents
            sdk["read"] = read.model_dump(by_alias=True, exclude_none=True)

    anyio.run(sdk_side)
    ours = server(*APP)
    tools = {entry["name"]: entry.get("_meta") for entry in handle(ours, "tools/list", {}, MODERN)["tools"]}
    assert {name: tools[name] for name in sdk["tools"]} == sdk["tools"]
    listed = {entry["uri"]: entry for entry in handle(ours, "resources/list", {}, MODERN)["resources"]}[DASHBOARD]
    assert (listed["mimeType"], listed["_meta"]) == (sdk["listed"]["mimeType"], sdk["listed"]["_meta"])
    (read,) = handle(ours, "resources/read", {"uri": DASHBOARD}, MODERN)["contents"]
    assert read == sdk["read"]


def test_the_extension_is_advertised_in_both_eras_only_when_a_view_is_served() -> None:
    """Given a server with a view and one without, when their capabilities are read (2025
    initialize, 2026 server/discover), then only the first names io.modelcontextprotocol/ui."""
    with_view, without = server(*APP), server(plain, readme)
    assert initialize_capabilities(with_view)["extensions"] == {EXTENSION_ID: {}}
    assert handle(with_view, "server/discover", {}, MODERN)["capabilities"]["extensions"] == {EXTENSION_ID: {}}
    assert "extensions" not in initialize_capabilities(without)
    assert "extensions" not in handle(without, "server/discover", {}, MODERN)["capabilities"]


def test_the_extension_is_advertised_beside_the_tasks_extension() -> None:
    """Given the tasks extension served too, then 2026 capabilities name both extensions and the
    2025 ones MCP Apps alone (tasks are undefined on the 2025 wire)."""

    async def method(request: Any, call: Any) -> dict[str, Any]:
        return {}

    tasks = SimpleNamespace(get=method, update=method, cancel=method)
    srv = server(*APP, services=make_services(tasks=tasks))
    assert srv.capabilities(modern=True)["extensions"] == {TASKS_EXTENSION: {}, EXTENSION_ID: {}}
    assert srv.capabilities(modern=False)["extensions"] == {EXTENSION_ID: {}}


def test_a_plain_resource_at_a_ui_uri_is_served_as_an_app() -> None:
    """Given @resource at a ui:// URI without a MIME type, then it is a view (the app MIME type,
    the extension advertised), as the SDK's add_resource and FastMCP make it."""

    @resource("ui://plain/view.html")
    def bare() -> str:
        return "<p>bare</p>"

    srv = server(bare)
    (listed,) = handle(srv, "resources/list", {}, MODERN)["resources"]
    assert listed["mimeType"] == APP_MIME_TYPE and "_meta" not in listed
    assert srv.capabilities(modern=False)["extensions"] == {EXTENSION_ID: {}}


def test_a_view_served_as_bytes_is_a_blob_and_one_that_returns_data_is_refused() -> None:
    """Given a view whose read returns bytes and one whose read returns a dict, then the first is
    a base64 blob of the app type, and reading the second fails naming it (a host renders HTML)."""

    @ui_resource("ui://bytes/view.html")
    def as_bytes() -> bytes:
        return b"<p>hi</p>"

    @ui_resource("ui://data/view.html")
    def as_data() -> dict[str, int]:
        return {"not": 1}

    srv = server(as_bytes, as_data)
    (read,) = handle(srv, "resources/read", {"uri": "ui://bytes/view.html"}, MODERN)["contents"]
    assert read == {"uri": "ui://bytes/view.html", "mimeType": APP_MIME_TYPE, "blob": "PHA+aGk8L3A+"}
    with pytest.raises(TypeError, match=r"ui://data/view.html: a view's read returns its HTML \(str or bytes\)"):
        handle(srv, "resources/read", {"uri": "ui://data/view.html"}, MODERN)


def _function() -> str:
    return ""


@pytest.mark.parametrize(
    ("decorate", "message"),
    [
        (lambda: tool(ui="https://example.com/view.html"), r"tool _function: ui: an MCP Apps view is a ui:// URI"),
        (lambda: tool(ui="ui://"), r"an MCP Apps view is a ui:// URI"),
        (lambda: tool(visibility=["app"]), r"visibility applies to a tool with a view"),
        (lambda: tool(ui=DASHBOARD, visibility=["user"]), r"visibility lists 'model' and/or 'app' once each"),
        (lambda: tool(ui=DASHBOARD, visibility=[]), r"visibility lists 'model' and/or 'app' once each"),
        (lambda: tool(ui=DASHBOARD, visibility=["app", "app"]), r"visibility lists 'model' and/or 'app' once each"),
        (lambda: tool(ui=DASHBOARD, visibility="app"), r"visibility is a list"),
        (lambda: ui_resource("https://example.com/view.html"), r"@ui_resource: an MCP Apps view is a ui:// URI"),
        (lambda: ui_resource("ui://views/{name}"), r"a view is one fixed resource, its URI has no variables"),
        (lambda: ui_resource(DASHBOARD, csp={"connectDomains": []}), r"csp is a ResourceCsp"),  # type: ignore[arg-type]
        (lambda: resource(DASHBOARD, mime_type="text/html"), r"a ui:// resource is served as 'text/html;profile=mcp"),
        (lambda: resource_template("ui://views/{name}"), r"an MCP Apps view is one fixed resource"),
        (lambda: ResourceCsp(connect_domains="https://api.example.com"), r"connect_domains is a list of origins"),
    ],
    ids=[
        "tool-ui-not-ui-scheme",
        "tool-ui-names-nothing",
        "visibility-without-view",
        "visibility-unknown",
        "visibility-empty",
        "visibility-repeated",
        "visibility-a-string",
        "view-not-ui-scheme",
        "view-with-variables",
        "csp-not-a-resource-csp",
        "ui-resource-other-mime-type",
        "ui-template",
        "csp-origins-a-string",
    ],
)
def test_decoration_refuses_what_no_host_could_render(decorate: Callable[[], Any], message: str) -> None:
    """Given a declaration a host could not use, when the module is imported (the decorator
    applied), then it fails there, naming what is wrong."""
    with pytest.raises(TypeError, match=message):
        decorate()(_function)


def test_visibility_is_listed_in_the_spec_order_whatever_order_it_was_given_in() -> None:
    listed = tool(ui=DASHBOARD, visibility=["app", "model"])(_function)
    (entry,) = Catalog.of([listed, dashboard]).tools.listing()
    assert entry["_meta"] == {"ui": {"resourceUri": DASHBOARD, "visibility": ["model", "app"]}}


def test_a_tool_naming_a_view_nobody_serves_fails_the_start() -> None:
    """Given a tool naming a view no feature serves (a typo), when the catalog is built, then it
    fails naming the tool, the URI and the views that are served; a host never sees it."""
    typo = tool(name="typo", ui="ui://dashbaord/app.html")(_function)
    with pytest.raises(ValueError, match=r"tool typo names ui://dashbaord/app\.html, which no feature module serves"):
        Catalog.of([typo, show_dashboard, dashboard])
    with pytest.raises(ValueError, match=r"ui:// resources served: none\)"):
        Catalog.of([show_dashboard, readme])


VIEW_MODULE = '''
from mcp_platform import ui_resource


@ui_resource("ui://later/view.html")
def later_view() -> str:
    """Defined in a module discovered after the tool's."""
    return "<p>later</p>"
'''
TOOL_MODULE = '''
from mcp_platform import tool


@tool(ui="ui://later/view.html")
def early() -> str:
    """Names a view defined in a later module."""
    return "text"
'''


@pytest.fixture
def features_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., ModuleType]]:
    monkeypatch.syspath_prepend(str(tmp_path))
    made: list[str] = []

    def make(name: str, **modules: str) -> ModuleType:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "__init__.py").write_text("")
        for module, source in modules.items():
            (folder / f"{module}.py").write_text(textwrap.dedent(source))
        made.append(name)
        return importlib.import_module(name)

    yield make
    for name in made:
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]


def test_discovery_checks_the_views_once_every_module_is_in(features_package: Callable[..., ModuleType]) -> None:
    """Given a tool module discovered before the module of its view, when the package is
    discovered, then the tool's view is found; without that module, discovery fails."""
    catalog = Catalog.discover(features_package("apps_pkg", a_tool=TOOL_MODULE, z_view=VIEW_MODULE))
    assert catalog.views == ["ui://later/view.html"] and catalog.tools.names() == ["early"]
    with pytest.raises(ValueError, match=r"tool early names ui://later/view\.html, which no feature module serves"):
        Catalog.discover(features_package("no_view_pkg", a_tool=TOOL_MODULE))
