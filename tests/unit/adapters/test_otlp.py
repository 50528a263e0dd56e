"""OTLP/HTTP span export through the OpenTelemetry SDK's exporter: each span with its own ids, times,
kind and attributes, posted to the collector on one kept-alive connection; a refusal raises (the
recorder logs it and drops the spans)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

from mcp_platform.adapters.otlp import OtlpHttpExporter, lambda_resource
from mcp_platform.application.spans import Span, SpanKind, Spans
from mcp_platform.protocol.trace_context import TraceContext
from tests.support.otlp_receiver import otlp_receiver

TRACE = TraceContext(
    trace_id="4bf92f3577b34da6a3ce929d0e0e4736", span_id="a1b2c3d4e5f60718", parent_id="00f067aa0ba902b7", state="v=1"
)


def span(trace: TraceContext = TRACE, **changes: object) -> Span:
    values: dict[str, object] = {
        "name": "tools/call echo",
        "trace": trace,
        "start_ns": 1_700_000_000_000_000_000,
        "end_ns": 1_700_000_000_250_000_000,
        "kind": SpanKind.SERVER,
        "attributes": {"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "retried": False, "rounds": 2},
    }
    return Span(**{**values, **changes})  # type: ignore[arg-type]


def exported(*spans: Span) -> list[dict[str, Any]]:
    """What a collector receives for ``spans``, in OTLP's JSON mapping."""
    with otlp_receiver() as receiver:
        OtlpHttpExporter(receiver.url, service_name="mcp-endpoint").export(spans)
        (request,) = receiver.requests
    (resource_spans,) = request.body["resourceSpans"]
    (scope_spans,) = resource_spans["scopeSpans"]
    assert scope_spans["scope"] == {"name": "mcp_platform"}
    found: list[dict[str, Any]] = scope_spans["spans"]
    return found


def test_a_span_keeps_its_ids_times_kind_and_attributes() -> None:
    # When a failed server span is exported
    (received,) = exported(span(error_type="tool_error"))
    # Then the collector has its own ids, its times, its kind, its typed attributes and its error
    assert {key: value for key, value in received.items() if key != "flags"} == {
        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
        "spanId": "a1b2c3d4e5f60718",
        "parentSpanId": "00f067aa0ba902b7",
        "traceState": "v=1",
        "name": "tools/call echo",
        "kind": 2,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000250000000",
        "status": {"code": 2, "message": "tool_error"},
        "attributes": [
            {"key": "mcp.method.name", "value": {"stringValue": "tools/call"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "echo"}},
            {"key": "retried", "value": {"boolValue": False}},
            {"key": "rounds", "value": {"intValue": "2"}},
            {"key": "error.type", "value": {"stringValue": "tool_error"}},
        ],
    }


def test_a_root_span_has_no_parent_and_a_success_no_status() -> None:
    root = TraceContext(trace_id=TRACE.trace_id, span_id=TRACE.span_id)
    (received,) = exported(span(root))
    assert not {"parentSpanId", "traceState"} & received.keys()
    assert received.get("status", {}).get("code", 0) == 0


def test_spans_are_posted_to_the_traces_path_on_one_connection() -> None:
    with otlp_receiver() as receiver:
        exporter = OtlpHttpExporter(receiver.url, service_name="mcp-ingest", resource={"faas.name": "fn"})
        # When two batches are exported
        exporter.export([span()])
        exporter.export([span(), span()])
        # Then both reached the receiver's traces path as OTLP protobuf, over the same kept-alive connection
        first, second = receiver.requests
        assert (first.path, first.content_type) == ("/v1/traces", "application/x-protobuf")
        assert first.client_port == second.client_port
        assert len(receiver.spans()) == 3
        assert receiver.spans()[0]["resource"] == {
            "service.name": {"stringValue": "mcp-ingest"},
            "faas.name": {"stringValue": "fn"},
        }


def test_a_refused_export_raises_and_the_next_one_is_sent_again() -> None:
    with otlp_receiver() as receiver:
        exporter = OtlpHttpExporter(receiver.url, service_name="svc")
        receiver.status = 400  # not retried (a 503 is, with backoff, until the timeout)
        with pytest.raises(OSError, match="did not take 1 span"):
            exporter.export([span()])
        receiver.status = 200
        exporter.export([span()])
        assert len(receiver.requests) == 2


def test_an_unreachable_collector_raises() -> None:
    with otlp_receiver() as receiver:
        url = receiver.url
    exporter = OtlpHttpExporter(url, service_name="svc", timeout_seconds=0.5)
    with pytest.raises(OSError):
        exporter.export([span()])


class FailingExporter:
    def __init__(self) -> None:
        self.batches: list[Sequence[Span]] = []

    def export(self, spans: Sequence[Span]) -> None:
        self.batches.append(spans)
        raise OSError("collector gone")


def test_a_failed_export_is_logged_and_its_spans_dropped(caplog: pytest.LogCaptureFixture) -> None:
    # Given spans whose exporter fails
    exporter = FailingExporter()
    spans = Spans(exporter)
    spans.add(span())
    # When they are flushed: Then nothing is raised to the work the span describes
    with caplog.at_level(logging.WARNING, logger="mcp_platform.application.spans"):
        spans.flush()
    assert "1 span(s) could not be exported" in caplog.text
    # And they are not sent again with the next batch
    spans.flush()
    assert len(exporter.batches) == 1 and len(spans) == 0


def test_a_span_of_an_unsampled_trace_is_not_exported() -> None:
    exporter = FailingExporter()
    spans = Spans(exporter)
    spans.add(span(TraceContext(trace_id=TRACE.trace_id, span_id=TRACE.span_id, sampled=False)))
    spans.flush()
    assert exporter.batches == []


def test_the_resource_names_the_lambda_function_when_there_is_one() -> None:
    environ = {
        "AWS_REGION": "eu-west-1",
        "AWS_LAMBDA_FUNCTION_NAME": "ingest",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
    }
    assert lambda_resource(environ) == {
        "cloud.provider": "aws",
        "cloud.region": "eu-west-1",
        "faas.name": "ingest",
        "faas.version": "$LATEST",
    }
    assert lambda_resource({}) == {"cloud.provider": "aws"}
