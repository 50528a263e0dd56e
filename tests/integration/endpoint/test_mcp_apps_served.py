"""MCP Apps over HTTP in both eras (tests/support/app_tools: a tool with a view, an app-only tool,
the view with its CSP origins, a permission and a border): the endpoint advertises
``io.modelcontextprotocol/ui``, lists each tool's ``_meta.ui`` and serves the view as
``text/html;profile=mcp-app`` with its ``_meta.ui``, as a host that renders apps reads them.

The official SDK client, declaring the extension as a host does, lists, reads and calls; every
message the server sends is validated against the official models when the module's server stops.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp.client import advertise

from mcp_platform.protocol.apps import APP_MIME_TYPE, EXTENSION_ID
from tests.support import app_tools
from tests.support.app_tools.dashboard import HTML, VIEW_URI
from tests.support.endpoint import AwsStack, Instance, endpoint_instance, sdk_client
from tests.support.mcp_http import CAPS_META, final_message, headers, modern_call

pytestmark = pytest.mark.integration

VIEW_META = {
    "ui": {
        "csp": {"connectDomains": ["https://api.example.com"]},
        "permissions": {"clipboardWrite": {}},
        "prefersBorder": False,
    }
}
# What a host that renders apps declares (the extension's settings: the MIME types it renders).
HOST_EXTENSION = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})


@pytest.fixture(scope="module")
def served(aws: AwsStack) -> Iterator[Instance]:
    with endpoint_instance(aws, extra_tools=(app_tools,)) as running:
        yield running
    running.recorder.validate_all()


def test_the_extension_is_advertised_in_the_2025_initialize_and_the_2026_discover(
    served: Instance, api_key: str
) -> None:
    """Given an endpoint serving a view, when a 2025 client initializes and a 2026 client
    discovers, then both capabilities name io.modelcontextprotocol/ui (no settings)."""
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"extensions": {EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}}},
        "clientInfo": {"name": "host", "version": "1"},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    initialized = final_message(httpx.post(served.url, headers=headers(api_key), json=body, timeout=30))
    discovered = final_message(modern_call(served.url, api_key, 2, "server/discover", {"_meta": CAPS_META}))
    assert initialized["result"]["capabilities"]["extensions"][EXTENSION_ID] == {}
    assert discovered["result"]["capabilities"]["extensions"][EXTENSION_ID] == {}


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"], ids=["2025", "2026"])
def test_a_host_lists_the_tools_views_reads_the_view_and_calls_the_tool(
    served: Instance, api_key: str, mode: str
) -> None:
    """Given a host declaring the extension, when it lists the tools and resources, reads the view
    a tool names and calls that tool, then: each tool carries its _meta.ui (the app-only one
    listed too, with its visibility: hosts filter, servers do not); the view is listed and read
    as the app MIME type with its _meta.ui; the call answers text for the model and structure
    for the view."""
    found: dict[str, Any] = {}

    async def body() -> None:
        async with sdk_client(served.url, api_key, mode, extensions=[HOST_EXTENSION]) as client:
            found["tools"] = {t.name: t.meta for t in (await client.list_tools()).tools}
            found["resources"] = {str(r.uri): r for r in (await client.list_resources()).resources}
            found["read"] = (await client.read_resource(found["tools"]["show_totals"]["ui"]["resourceUri"])).contents
            found["call"] = await client.call_tool("show_totals", {"days": 2})

    anyio.run(body)
    assert found["tools"]["show_totals"] == {"ui": {"resourceUri": VIEW_URI}}
    assert found["tools"]["refresh_totals"] == {"ui": {"resourceUri": VIEW_URI, "visibility": ["app"]}}
    listed = found["resources"][VIEW_URI]
    assert (listed.mime_type, listed.meta, listed.title) == (APP_MIME_TYPE, VIEW_META, "Dashboard")
    (view,) = found["read"]
    assert (str(view.uri), view.mime_type, view.text, view.meta) == (VIEW_URI, APP_MIME_TYPE, HTML, VIEW_META)
    call = found["call"]
    assert not call.is_error and call.structured_content == {"days": 2, "total": 6}
    assert call.content[0].text == '{"days":2,"total":6}'
