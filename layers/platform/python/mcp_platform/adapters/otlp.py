"""OTLP/HTTP export of spans, JSON-encoded, to an OpenTelemetry collector.

In Lambda the collector is the OpenTelemetry collector extension (a layer the stack adds when
the context key ``otlp_endpoint`` is set) listening on ``localhost:4318``; it forwards the spans
to the configured backend after the response, so a request waits for one loopback POST only.
The standard variable ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_ENDPOINT``
plus ``/v1/traces``) names it; nothing here is imported unless it is set.

The encoding is OTLP's JSON mapping of ``ExportTraceServiceRequest`` (trace and span ids as hex,
64-bit integers as decimal strings), which every OTLP/HTTP receiver accepts: no protobuf, no SDK.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from mcp_platform.application.spans import AttributeValue, Span

CONTENT_TYPE = "application/json"
SCOPE = {"name": "mcp_platform"}
STATUS_ERROR = 2  # OTLP Status.StatusCode STATUS_CODE_ERROR
TIMEOUT_SECONDS = 2.0


class OtlpHttpExporter:
    """POSTs each batch of spans to ``url`` (``.../v1/traces``) on one kept-alive connection."""

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
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._path = (parts.path or "/v1/traces") + (f"?{parts.query}" if parts.query else "")
        self._timeout = timeout_seconds
        self._resource = {"service.name": service_name, **(resource or {})}
        self._connection: http.client.HTTPConnection | None = None

    def export(self, spans: Sequence[Span]) -> None:
        body = json.dumps(encode(spans, self._resource), separators=(",", ":")).encode()
        connection = self._connection or self._connect()
        try:
            connection.request("POST", self._path, body=body, headers={"Content-Type": CONTENT_TYPE})
            response = connection.getresponse()
            answer = response.read()
        except (OSError, http.client.HTTPException):
            connection.close()
            self._connection = None
            raise
        if not 200 <= response.status < 300:
            raise OSError(f"the OTLP receiver answered {response.status}: {answer[:200]!r}")

    def _connect(self) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        self._connection = kind(self._host, self._port, timeout=self._timeout)
        return self._connection


def encode(spans: Sequence[Span], resource: Mapping[str, AttributeValue]) -> dict[str, Any]:
    """The ``ExportTraceServiceRequest`` of ``spans``, all from one resource and scope."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(resource)},
                "scopeSpans": [{"scope": SCOPE, "spans": [_span(span) for span in spans]}],
            }
        ]
    }


def _span(span: Span) -> dict[str, Any]:
    trace = span.trace
    attributes = dict(span.attributes)
    encoded: dict[str, Any] = {
        "traceId": trace.trace_id,
        "spanId": trace.span_id,
        "name": span.name,
        "kind": int(span.kind),
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(max(span.end_ns, span.start_ns)),
    }
    if trace.parent_id is not None:
        encoded["parentSpanId"] = trace.parent_id
    if trace.state:
        encoded["traceState"] = trace.state
    if span.error_type is not None:
        attributes["error.type"] = span.error_type
        encoded["status"] = {"code": STATUS_ERROR, "message": span.error_type}
    encoded["attributes"] = _attributes(attributes)
    return encoded


def _attributes(values: Mapping[str, AttributeValue]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _value(value)} for key, value in values.items()]


def _value(value: AttributeValue) -> dict[str, Any]:
    if isinstance(value, bool):  # before int: bool is an int subclass
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": value}


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
