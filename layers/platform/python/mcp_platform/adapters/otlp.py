"""OTLP/HTTP export of spans through the OpenTelemetry SDK, to an OpenTelemetry collector; the AWS
SDK's calls as child spans through the SDK's botocore instrumentation.

In Lambda the collector is the OpenTelemetry collector extension (a layer the stack adds when
the context key ``otlp_endpoint`` is set) listening on ``localhost:4318``; it forwards the spans
to the configured backend after the response, so a request waits for one loopback POST only.
The standard variable ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_ENDPOINT``
plus ``/v1/traces``) names it; nothing here, and nothing of the SDK, is imported unless it is set.

The platform's spans (an MCP request, a task run, a stream record) keep the ids their log lines
carry: they are handed to the SDK's ``OTLPSpanExporter`` (protobuf over HTTP) as finished spans.
A botocore call made inside one of them is a client span of the SDK's instrumentation whose parent
is that span (:class:`PlatformParentTracerProvider` reads ``protocol.trace_context``); it joins the
platform's recorder, so it leaves with the next flush, inside the invocation. A call outside any
platform span records nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace as otel_trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags, TraceState
from opentelemetry.util.types import Attributes

from mcp_platform.application.spans import AttributeValue, Span, SpanKind, Spans
from mcp_platform.protocol import trace_context
from mcp_platform.protocol.trace_context import TraceContext

SCOPE = InstrumentationScope("mcp_platform")
TIMEOUT_SECONDS = 2.0
_KINDS = {
    SpanKind.INTERNAL: otel_trace.SpanKind.INTERNAL,
    SpanKind.SERVER: otel_trace.SpanKind.SERVER,
    SpanKind.CLIENT: otel_trace.SpanKind.CLIENT,
    SpanKind.CONSUMER: otel_trace.SpanKind.CONSUMER,
}


class OtlpHttpExporter:
    """The SDK's OTLP/HTTP exporter posting each batch of spans to ``url`` (``.../v1/traces``) on
    one kept-alive session; a batch it could not send raises."""

    def __init__(
        self,
        url: str,
        *,
        service_name: str,
        resource: Mapping[str, AttributeValue] | None = None,
        timeout_seconds: float = TIMEOUT_SECONDS,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"an OTLP/HTTP traces URL (http or https) is expected, got {url!r}")
        self.resource = Resource({"service.name": service_name, **(resource or {})})
        self._exporter = OTLPSpanExporter(endpoint=url, timeout=timeout_seconds)

    def export(self, spans: Sequence[Span]) -> None:
        if self._exporter.export([readable(span, self.resource) for span in spans]) is not SpanExportResult.SUCCESS:
            raise OSError(f"the OTLP receiver did not take {len(spans)} span(s)")


def readable(span: Span, resource: Resource) -> ReadableSpan:
    """``span`` as the SDK's finished span, with its own ids."""
    trace = span.trace
    context = _span_context(trace.trace_id, trace.span_id, sampled=trace.sampled, state=trace.state)
    parent = _span_context(trace.trace_id, trace.parent_id, sampled=trace.sampled) if trace.parent_id else None
    attributes: dict[str, AttributeValue] = dict(span.attributes)
    status = Status(StatusCode.UNSET)
    if span.error_type is not None:
        attributes["error.type"] = span.error_type
        status = Status(StatusCode.ERROR, span.error_type)
    return ReadableSpan(
        name=span.name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=attributes,
        kind=_KINDS[span.kind],
        status=status,
        start_time=span.start_ns,
        end_time=max(span.end_ns, span.start_ns),
        instrumentation_scope=SCOPE,
    )


def _span_context(trace_id: str, span_id: str, *, sampled: bool, state: str | None = None) -> SpanContext:
    return SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT),
        trace_state=TraceState.from_header([state]) if state else None,
    )


def lambda_resource(environ: Mapping[str, str]) -> dict[str, AttributeValue]:
    """What names this process in the backend, from Lambda's own variables (absent elsewhere)."""
    resource: dict[str, AttributeValue] = {"cloud.provider": "aws"}
    for attribute, variable in (
        ("cloud.region", "AWS_REGION"),
        ("faas.name", "AWS_LAMBDA_FUNCTION_NAME"),
        ("faas.version", "AWS_LAMBDA_FUNCTION_VERSION"),
        ("faas.instance", "AWS_LAMBDA_LOG_STREAM_NAME"),
    ):
        if environ.get(variable):
            resource[attribute] = environ[variable]
    return resource


# -- the AWS SDK's calls as child spans ------------------------------------------------------------
class _Recorder:
    """The process's current span recorder (a handler module built again replaces it)."""

    spans: Spans | None = None
    instrumented = False
    lock = threading.Lock()


class RecordingProcessor(SpanProcessor):
    """Hands each ended botocore span to the platform's recorder, as one of its own."""

    def on_end(self, span: ReadableSpan) -> None:
        recorder = _Recorder.spans
        context, parent = span.context, span.parent
        if recorder is None or context is None or parent is None:
            return
        recorder.add(
            Span(
                name=span.name,
                trace=TraceContext(
                    trace_id=format(context.trace_id, "032x"),
                    span_id=format(context.span_id, "016x"),
                    parent_id=format(parent.span_id, "016x"),
                    sampled=context.trace_flags.sampled,
                ),
                start_ns=span.start_time or 0,
                end_ns=span.end_time or span.start_time or 0,
                kind=SpanKind.CLIENT,
                attributes=_plain(span.attributes),
                error_type=span.status.description if span.status.status_code is StatusCode.ERROR else None,
            )
        )


def _plain(attributes: Attributes) -> dict[str, AttributeValue]:
    return {key: value for key, value in (attributes or {}).items() if isinstance(value, str | bool | int | float)}


class PlatformParentTracer(otel_trace.Tracer):
    """A tracer whose spans, unless given a context, are children of the platform's current span."""

    def __init__(self, tracer: otel_trace.Tracer) -> None:
        self._tracer = tracer

    def start_span(self, name: str, context: Any = None, *args: Any, **kwargs: Any) -> otel_trace.Span:
        return self._tracer.start_span(name, context if context is not None else _platform_context(), *args, **kwargs)

    @contextmanager
    def start_as_current_span(  # type: ignore[override]
        self, name: str, context: Any = None, *args: Any, **kwargs: Any
    ) -> Iterator[otel_trace.Span]:
        parent = context if context is not None else _platform_context()
        with self._tracer.start_as_current_span(name, parent, *args, **kwargs) as span:
            yield span


class PlatformParentTracerProvider(otel_trace.TracerProvider):
    """The SDK's provider (sampled only under a platform span), its tracers :class:`PlatformParentTracer`."""

    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider

    def get_tracer(self, *args: Any, **kwargs: Any) -> otel_trace.Tracer:
        return PlatformParentTracer(self._provider.get_tracer(*args, **kwargs))


def _platform_context() -> Any:
    current = trace_context.current()
    if current is None:
        return None
    parent = _span_context(current.trace_id, current.span_id, sampled=current.sampled)
    return otel_trace.set_span_in_context(NonRecordingSpan(parent))


def instrument_aws_sdk(spans: Spans, resource: Resource) -> None:
    """Every botocore call of the process made inside a platform span becomes its child span in
    ``spans``; instrumented once per process, the recorder replaced on each call."""
    with _Recorder.lock:
        _Recorder.spans = spans
        if _Recorder.instrumented:
            return
        from opentelemetry.instrumentation.botocore import BotocoreInstrumentor

        provider = TracerProvider(resource=resource, sampler=ParentBased(ALWAYS_OFF))
        provider.add_span_processor(RecordingProcessor())
        # The layer pins botocore-compatible versions: no scan of every installed distribution.
        BotocoreInstrumentor().instrument(tracer_provider=PlatformParentTracerProvider(provider), skip_dep_check=True)
        _Recorder.instrumented = True
