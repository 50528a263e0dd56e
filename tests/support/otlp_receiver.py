"""A loopback OTLP/HTTP traces receiver for tests: keeps every request it was sent, decoded into
OTLP's JSON mapping (hex ids, 64-bit integers as strings, enums as numbers) whether it came as
protobuf (the OpenTelemetry SDK's exporter) or JSON."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    content_type: str
    body: dict[str, Any]
    client_port: int


@dataclass
class OtlpReceiver:
    url: str
    requests: list[Received] = field(default_factory=list)
    status: int = 200  # what the next requests are answered

    def spans(self) -> list[dict[str, Any]]:
        """Every span received, with its resource's attributes under ``resource``."""
        found = []
        for request in self.requests:
            for resource_spans in request.body["resourceSpans"]:
                resource = {a["key"]: a["value"] for a in resource_spans["resource"]["attributes"]}
                for scope_spans in resource_spans["scopeSpans"]:
                    found += [{**span, "resource": resource} for span in scope_spans["spans"]]
        return found


@contextmanager
def otlp_receiver() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver("")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the collector's receiver
        disable_nagle_algorithm = True  # headers and body leave at once, as the collector's do

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            content_type = self.headers.get("content-type", "")
            receiver.requests.append(
                Received(self.path, content_type, decoded(body, content_type), self.client_address[1])
            )
            answer = b"{}"
            self.send_response(receiver.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def decoded(body: bytes, content_type: str) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` in OTLP's JSON mapping."""
    if content_type != "application/x-protobuf":
        parsed: dict[str, Any] = json.loads(body)
        return parsed
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    mapped = MessageToDict(request, use_integers_for_enums=True)
    for resource_spans in mapped.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for name in ID_FIELDS:  # protobuf's JSON writes bytes as base64, OTLP's as hex
                    if name in span:
                        span[name] = base64.b64decode(span[name]).hex()
    return mapped
