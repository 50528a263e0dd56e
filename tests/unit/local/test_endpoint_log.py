"""The local endpoint's log: its EMF and JSON lines as deployed in a file (a request's JSON lines
only), one compact line per call on the console, and a trace's lines read back from the file."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

from local.endpoint_log import EndpointLog, compact_line
from local.journey import endpoint_lines
from mcp_platform.application.metrics import MetricsWriter
from mcp_platform.protocol import trace_context

TOOL = "gen_ai.tool.name"


def operation_line(**properties: str) -> str:
    sink = io.StringIO()
    target = None if TOOL in properties else (TOOL, "append_note")  # a name the server does not know: no dimension
    MetricsWriter("Test", "endpoint", sink).operation(
        method="tools/call", seconds=0.0412, failed="error.type" in properties, target=target, properties=properties
    )
    return sink.getvalue().strip()


def test_a_call_is_one_compact_line_naming_method_tool_status_duration_and_trace() -> None:
    # Given the operation metric line of a tools/call made under a trace
    trace = trace_context.start()
    scope = trace_context.scope()
    try:
        trace_context.activate(trace)
        line = operation_line()
    finally:
        trace_context.end_scope(scope)
    # When it is made compact / Then it says what the call was, how it ended, how long, which trace
    compact = compact_line(line)
    assert compact is not None
    assert compact.split() == ["call", "tools/call", "append_note", "ok", "41.2", "ms", "trace", trace.trace_id]


def test_a_failed_call_names_its_error_and_other_lines_are_not_calls() -> None:
    # A refused call (an unknown tool: no tool dimension) shows its error type and the name sent
    failed = compact_line(operation_line(**{"error.type": "-32602", TOOL: "nope"}))
    assert failed is not None and failed.split()[1:4] == ["tools/call", "nope", "-32602"]
    # A counter's line, a log line, and text are not calls
    sink = io.StringIO()
    MetricsWriter("Test", "endpoint", sink).count("mcp.server.store.conflicts")
    assert compact_line(sink.getvalue()) is None
    assert compact_line('{"level": "INFO", "message": "hi"}') is None
    assert compact_line("not json") is None


def test_the_file_keeps_lines_as_deployed_and_a_traces_lines_are_found_in_it(tmp_path: Path) -> None:
    # Given the endpoint log, as the local platform wires it (metrics stream and root handler)
    console = io.StringIO()
    log = EndpointLog(tmp_path / "aws-4566" / "endpoint-8000.jsonl", "mcp-endpoint", console)
    logger = logging.getLogger("tests.endpoint_log")
    logger.setLevel(logging.INFO)
    trace = trace_context.start()
    try:
        # When a request logs a line and writes its metric line, and a line is logged outside any request
        scope = trace_context.scope()
        try:
            trace_context.activate(trace)
            logger.info("inside the request")
            MetricsWriter("Test", "mcp-endpoint", log).operation(
                method="tools/call", seconds=0.01, failed=False, target=(TOOL, "append_note"), properties={}
            )
        finally:
            trace_context.end_scope(scope)
        logger.info("outside any request")
    finally:
        log.close()
    # Then the file holds the request's JSON line and the EMF line as deployed, not the other line
    lines = [json.loads(text) for text in (tmp_path / "aws-4566" / "endpoint-8000.jsonl").read_text().splitlines()]
    assert [line.get("message") for line in lines] == ["inside the request", None]
    assert lines[0]["service"] == "mcp-endpoint" and lines[1]["_aws"]["CloudWatchMetrics"]
    assert all(line["trace_id"] == trace.trace_id for line in lines)
    # And the console got the call's compact line; the trace's lines read back, oldest first
    assert console.getvalue().count("\n") == 1 and trace.trace_id in console.getvalue()
    found = endpoint_lines(trace.trace_id, tmp_path / "aws-4566")
    assert [step.text.split()[0] for step in found] == ["log", "EMF"]
    assert endpoint_lines(trace_context.start().trace_id, tmp_path / "aws-4566") == []
