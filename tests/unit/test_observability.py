"""EMF metric lines: each is one JSON object CloudWatch turns into a metric (namespace, the
service dimension, the metric's name and unit), its value written to three decimals."""

from __future__ import annotations

import io
import json

from mcp_platform.observability import MetricsWriter


def test_an_emf_line_is_the_json_cloudwatch_reads() -> None:
    # Given a writer / When two values are emitted for one metric
    stream = io.StringIO()
    writer = MetricsWriter("mcp-platform", "endpoint", stream)
    writer.emit("TimeToFirstByte", 12.3456789)
    writer.emit("TimeToFirstByte", 7)
    # Then each line parses, names its metric, dimension and unit, and carries the value
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    directive = first["_aws"]["CloudWatchMetrics"][0]
    assert directive == {
        "Namespace": "mcp-platform",
        "Dimensions": [["service"]],
        "Metrics": [{"Name": "TimeToFirstByte", "Unit": "Milliseconds"}],
    }
    assert first["service"] == "endpoint" and isinstance(first["_aws"]["Timestamp"], int)
    assert first["TimeToFirstByte"] == 12.346 and second["TimeToFirstByte"] == 7


def test_each_line_leaves_the_process_buffer_when_it_is_written() -> None:
    """S4: TTFB is a metric, so its line must reach CloudWatch Logs."""
    # Given stdout as Lambda gives it: a pipe, so Python buffers it by blocks, not lines
    pipe = io.BytesIO()
    stdout = io.TextIOWrapper(pipe, encoding="utf-8", line_buffering=False, write_through=False)
    writer = MetricsWriter("mcp-platform", "endpoint", stdout)
    # When one request's metric is emitted
    writer.emit("TimeToFirstByte", 1.5)
    # Then the line is already in the pipe: the environment may be frozen or killed right after
    # the response, and a line still in the buffer would arrive late or never
    assert json.loads(pipe.getvalue().decode())["TimeToFirstByte"] == 1.5
