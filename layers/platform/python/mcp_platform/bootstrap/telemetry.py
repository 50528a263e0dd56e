"""Optional span export: built only when the function is told where to send spans.

``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` unset (the default; the stack sets it only with the context
key ``otlp_endpoint``), :func:`build_spans` returns None and neither the span model nor the OTLP
exporter (nor the OpenTelemetry SDK) is imported: no cold-start cost, no per-request cost beyond a
None check. Set, the AWS SDK's calls made inside a recorded span are recorded as its children.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from mcp_platform.config import Settings
from mcp_platform.protocol import trace_context
from mcp_platform.protocol.trace_context import TraceContext

if TYPE_CHECKING:
    from mcp_platform.application.spans import AttributeValue, Spans


def build_spans(settings: Settings, environ: Mapping[str, str] = os.environ) -> Spans | None:
    """The process's span recorder exporting to ``settings.otlp_traces_endpoint``, or None."""
    if not settings.otlp_traces_endpoint:
        return None
    from mcp_platform.adapters.otlp import OtlpHttpExporter, instrument_aws_sdk, lambda_resource
    from mcp_platform.application.spans import Spans

    exporter = OtlpHttpExporter(
        settings.otlp_traces_endpoint, service_name=settings.service_name, resource=lambda_resource(environ)
    )
    spans = Spans(exporter)
    instrument_aws_sdk(spans, exporter.resource)
    return spans


def record_work(
    spans: Spans | None,
    name: str,
    *,
    trace_id: str | None,
    parent_id: str | None,
    started_ns: int,
    attributes: Mapping[str, AttributeValue],
) -> TraceContext | None:
    """A stream record's work (ingest, audit) as a span of the trace of the call that caused it
    (``parent_id``: that call's span): activated, so the log lines written after it carry its
    ids, and recorded when spans are on. None when the record names no trace."""
    if trace_id is None:
        return None
    trace = TraceContext(trace_id=trace_id, span_id=trace_context.new_span_id(), parent_id=parent_id)
    trace_context.activate(trace)
    if spans is not None:
        from mcp_platform.application.spans import Span, SpanKind

        spans.add(
            Span(
                name=name,
                trace=trace,
                start_ns=started_ns,
                end_ns=time.time_ns(),
                kind=SpanKind.CONSUMER,
                attributes=attributes,
            )
        )
    return trace
