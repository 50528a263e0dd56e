"""The event functions' Powertools Logger and EMF: the fields operators query on every line of the
process, the trace as correlation id, and the platform's counters as Powertools metric sets."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from mcp_platform.adapters.powertools import PowertoolsMetricsWriter, platform_logger
from mcp_platform.application.metrics import ERROR_TYPE, STORE_CONFLICTS, TOOL
from mcp_platform.protocol import trace_context
from mcp_platform.protocol.trace_context import TraceContext

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"


@pytest.fixture
def traced() -> Iterator[None]:
    scope = trace_context.scope()
    trace_context.activate(TraceContext(trace_id=TRACE, span_id=SPAN, parent_id=None))
    yield
    trace_context.end_scope(scope)


def lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]


def test_every_logger_of_the_process_writes_the_fields_operators_query(capsys: pytest.CaptureFixture[str]) -> None:
    # Given the function's logger
    logger = platform_logger("mcp-ingest", "INFO")
    # When it, a platform module and botocore each log a line
    logger.info("ingested", extra={"event_id": "call-1"})
    logging.getLogger("mcp_platform.application.events.ingest").warning("late %s", "event")
    logging.getLogger("botocore.credentials").info("Found credentials")
    # Then each is written once, with the same fields, and the call's extra fields
    own, module, botocore = lines(capsys)
    for line in (own, module, botocore):
        assert list(line)[:5] == ["level", "logger", "message", "service", "timestamp"]
        assert line["service"] == "mcp-ingest"
    assert (own["logger"], own["message"], own["event_id"]) == ("mcp-ingest", "ingested", "call-1")
    assert (module["level"], module["message"]) == ("WARNING", "late event")
    assert botocore["logger"] == "botocore.credentials"


@pytest.mark.usefixtures("traced")
def test_a_line_in_a_trace_carries_its_ids_and_the_trace_as_correlation_id(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given the function's logger, inside a record's trace
    logger = platform_logger("mcp-audit", "INFO")
    # When a failure is logged
    try:
        raise ValueError("poison")
    except ValueError:
        logger.exception("record 7 failed", extra={"sequence_number": "7"})
    # Then the line names the trace, the span, the record and the exception
    (line,) = lines(capsys)
    assert (line["trace_id"], line["span_id"], line["correlation_id"]) == (TRACE, SPAN, TRACE)
    assert line["sequence_number"] == "7"
    assert "ValueError: poison" in str(line["exception"])


def test_built_again_the_logger_writes_through_the_new_handler_only(capsys: pytest.CaptureFixture[str]) -> None:
    # Given the function's logger built twice (a reload of its handler module)
    platform_logger("mcp-task-worker", "INFO")
    logger = platform_logger("mcp-task-worker", "INFO")
    # When it logs
    logger.info("once")
    # Then the line is written once
    assert [line["message"] for line in lines(capsys)] == ["once"]


@pytest.mark.usefixtures("traced")
def test_a_counter_is_one_powertools_emf_line_with_its_dimension_sets_and_properties() -> None:
    # Given the task worker's counters on Powertools' EMF
    stream = io.StringIO()
    writer = PowertoolsMetricsWriter("McpPlatform", "mcp-task-worker", stream)
    # When a conflict of a tool is counted
    writer.count(STORE_CONFLICTS, per=(TOOL, "echo"), properties={ERROR_TYPE: "ConditionalCheckFailed"})
    # Then one EMF line counts it per service and per tool, the error type and trace as properties
    (line,) = [json.loads(text) for text in stream.getvalue().splitlines()]
    (directive,) = line["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "McpPlatform"
    assert directive["Dimensions"] == [["service"], ["service", TOOL]]
    assert directive["Metrics"] == [{"Name": STORE_CONFLICTS, "Unit": "Count"}]
    assert (line["service"], line[TOOL], line[STORE_CONFLICTS]) == ("mcp-task-worker", "echo", [1.0])
    assert (line[ERROR_TYPE], line["trace_id"]) == ("ConditionalCheckFailed", TRACE)
