"""Every request leaves one EMF line with the OpenTelemetry MCP metrics, naming its tool."""

from __future__ import annotations

import io
import json

import pytest

from mcp_platform.application.metrics import (
    ERROR_TYPE,
    METHOD,
    OPERATION_DURATION,
    OPERATION_ERRORS,
    TOOL,
    MetricsWriter,
)
from tests.support.endpoint import Instance
from tests.support.interactive import modern_meta
from tests.support.mcp_http import call, final_message, initialize, modern_call

pytestmark = pytest.mark.integration


def operations(stream: io.StringIO) -> list[dict]:
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    return [line for line in lines if OPERATION_DURATION in line]


def test_each_request_records_its_method_tool_duration_and_error_type(instance: Instance, api_key: str) -> None:
    # Given the endpoint writing its metrics to a stream the test reads
    stream = io.StringIO()
    instance.endpoint.streamer.metrics = MetricsWriter("McpPlatform", "mcp-endpoint", stream)
    # When a 2026 tools/call succeeds, one names a tool that does not exist, and a 2025 tools/list runs
    echo = {"name": "echo", "arguments": {"text": "hi"}, "_meta": modern_meta({})}
    assert "result" in final_message(modern_call(instance.url, api_key, 1, "tools/call", echo))
    unknown = {"name": "no_such_tool", "arguments": {}, "_meta": modern_meta({})}
    assert final_message(modern_call(instance.url, api_key, 2, "tools/call", unknown))["error"]["code"] == -32602
    session = initialize(instance.url, api_key)
    assert "result" in final_message(call(instance.url, api_key, session, 3, "tools/list"))
    # Then each request left one line: method, tool, duration, failure and its error type
    ok, refused, listed = [line for line in operations(stream) if line[METHOD] != "initialize"]
    assert (ok[METHOD], ok[TOOL], ok[OPERATION_ERRORS], ERROR_TYPE in ok) == ("tools/call", "echo", 0, False)
    assert ["service", METHOD, TOOL] in ok["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
    # And an unknown tool's name is kept in the line but never becomes a (billed) metric dimension
    assert (refused[TOOL], refused[OPERATION_ERRORS], refused[ERROR_TYPE]) == ("no_such_tool", 1, "-32602")
    assert all(TOOL not in dimensions for dimensions in refused["_aws"]["CloudWatchMetrics"][0]["Dimensions"])
    assert (listed[METHOD], TOOL in listed, listed["mcp.protocol.version"]) == ("tools/list", False, "2025-11-25")
    assert all(line[OPERATION_DURATION] >= 0 for line in (ok, refused, listed))
