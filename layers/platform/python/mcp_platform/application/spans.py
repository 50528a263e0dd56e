"""Spans for an OpenTelemetry backend, optional: off unless the function is told where to send them.

A span here is the unit of work a log line already names by its ``trace_id`` and ``span_id``
(``protocol.trace_context``): an MCP request on the endpoint, a task run on the worker, a record
on ingest and audit. Each is recorded with exactly those ids, so a trace id finds the same work
in the logs and in the tracing backend, and one call's spans (endpoint, ingest, audit) form one
trace. The ids, times and attributes are known already: an exporter (``adapters.otlp``, the
OpenTelemetry SDK's OTLP/HTTP exporter) sends them as they are to the collector extension, with
the AWS SDK's calls made inside them as their child spans (the SDK's botocore instrumentation).

:class:`Spans` keeps what was recorded until :meth:`Spans.flush`, which each function calls
where its unit of work ends and inside its invocation (the endpoint before a response's last
byte, the other functions before they return): Lambda may freeze the environment right after.
An export that fails is logged and dropped; it never fails the work it describes.

Names and attributes follow the OpenTelemetry MCP semantic conventions (status: development):
``{mcp.method.name} {target}``, ``mcp.method.name``, ``gen_ai.tool.name``, ``error.type``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from mcp_platform.protocol.trace_context import TraceContext

logger = logging.getLogger(__name__)

AttributeValue = str | int | float | bool


class SpanKind(IntEnum):
    """OTLP's ``Span.SpanKind`` values."""

    INTERNAL = 1
    SERVER = 2
    CLIENT = 3
    CONSUMER = 5


@dataclass(frozen=True, slots=True)
class Span:
    """One finished unit of work: the span ``trace`` names (its ``parent_id`` is the caller's),
    wall-clock start and end in nanoseconds since the epoch, and ``error_type`` when it failed."""

    name: str
    trace: TraceContext
    start_ns: int
    end_ns: int
    kind: SpanKind
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    error_type: str | None = None


class SpanExporter(Protocol):
    """Sends spans somewhere (blocking); raises when it could not."""

    def export(self, spans: Sequence[Span]) -> None: ...


class Spans:
    """The spans a process recorded and has not exported yet. Safe to share between threads
    (a local server flushes in worker threads): one export runs at a time, on its own batch."""

    def __init__(self, exporter: SpanExporter) -> None:
        self._exporter = exporter
        self._pending: list[Span] = []
        self._pending_lock = threading.Lock()
        self._export_lock = threading.Lock()  # the exporter's connection serves one request at a time

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, span: Span) -> None:
        if span.trace.sampled:  # the caller's sampled flag decides, as W3C trace context asks
            with self._pending_lock:
                self._pending.append(span)

    def flush(self) -> None:
        """Exports what was recorded (blocking); a failure is logged, the spans are dropped."""
        with self._pending_lock:
            spans, self._pending = self._pending, []
        if not spans:
            return
        try:
            with self._export_lock:
                self._exporter.export(spans)
        except Exception:
            logger.warning("%d span(s) could not be exported; dropped", len(spans), exc_info=True)
