"""EMF metric lines: each is one JSON object CloudWatch turns into metrics (namespace, dimension
sets, each metric's name and unit), with the OpenTelemetry MCP names for per-request metrics."""

from __future__ import annotations

import io
import json

from mcp_platform.application.metrics import OPERATION_DURATION, OPERATION_ERRORS, TIME_TO_FIRST_BYTE, MetricsWriter


def test_an_emf_line_is_the_json_cloudwatch_reads() -> None:
    # Given a writer / When a request's line is written with its time to first byte
    stream = io.StringIO()
    writer = MetricsWriter("mcp-platform", "endpoint", stream)
    writer.operation(method="ping", seconds=0.5, failed=False, target=None, properties={}, first_byte_ms=12.3456789)
    writer.operation(method="ping", seconds=0.25, failed=False, target=None, properties={})
    # Then each line parses; the first has a second directive: the time to first byte per service
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["_aws"]["CloudWatchMetrics"][1] == {
        "Namespace": "mcp-platform",
        "Dimensions": [["service"]],
        "Metrics": [{"Name": TIME_TO_FIRST_BYTE, "Unit": "Milliseconds"}],
    }
    assert first["service"] == "endpoint" and isinstance(first["_aws"]["Timestamp"], int)
    assert first[TIME_TO_FIRST_BYTE] == 12.345679 and first[OPERATION_DURATION] == 0.5
    # And a request that sent no byte has no such directive or value
    assert len(second["_aws"]["CloudWatchMetrics"]) == 1 and TIME_TO_FIRST_BYTE not in second


def test_each_line_leaves_the_process_buffer_when_it_is_written() -> None:
    """S4: TTFB is a metric, so its line must reach CloudWatch Logs."""
    # Given stdout as Lambda gives it: a pipe, so Python buffers it by blocks, not lines
    pipe = io.BytesIO()
    stdout = io.TextIOWrapper(pipe, encoding="utf-8", line_buffering=False, write_through=False)
    writer = MetricsWriter("mcp-platform", "endpoint", stdout)
    # When one request's line is written
    writer.operation(method="ping", seconds=0.5, failed=False, target=None, properties={}, first_byte_ms=1.5)
    # Then the line is already in the pipe: the environment may be frozen or killed right after
    # the response, and a line still in the buffer would arrive late or never
    assert json.loads(pipe.getvalue().decode())[TIME_TO_FIRST_BYTE] == 1.5


def test_an_operation_line_carries_duration_and_failure_per_method_and_tool() -> None:
    # Given a writer / When a failed tools/call of one tool is recorded
    stream = io.StringIO()
    MetricsWriter("McpPlatform", "mcp-endpoint", stream).operation(
        method="tools/call",
        seconds=0.25,
        failed=True,
        target=("gen_ai.tool.name", "append_note"),
        properties={"error.type": "tool_error", "mcp.protocol.version": "2026-07-28"},
    )
    line = json.loads(stream.getvalue())
    directive = line["_aws"]["CloudWatchMetrics"][0]
    # Then both metrics are dimensioned overall and per method and tool (the method's count and
    # errors are the sum of its tools' series), with the attributes as properties
    assert directive["Dimensions"] == [["service"], ["service", "mcp.method.name", "gen_ai.tool.name"]]
    assert directive["Metrics"] == [
        {"Name": OPERATION_DURATION, "Unit": "Seconds"},
        {"Name": OPERATION_ERRORS, "Unit": "Count"},
    ]
    assert (line[OPERATION_DURATION], line[OPERATION_ERRORS]) == (0.25, 1)
    assert (line["mcp.method.name"], line["gen_ai.tool.name"], line["error.type"]) == (
        "tools/call",
        "append_note",
        "tool_error",
    )
