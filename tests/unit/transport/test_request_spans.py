"""With span export on, each MCP request is a span of its trace (the ids its log lines carry),
named as the OpenTelemetry MCP conventions name it, and exported before the response's last byte:
behind the Web Adapter the invocation ends with that byte, and the environment may freeze."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from mcp_platform.application.auth.loopback import LoopbackAuthenticator
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.application.metrics import JsonLogFormatter
from mcp_platform.application.server import McpServer
from mcp_platform.application.services import Services
from mcp_platform.application.spans import Span, SpanKind, Spans
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol.tools import ToolCatalog, tool
from mcp_platform.protocol.versions import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_platform.testing import InMemorySessions
from mcp_platform.transport.endpoint import McpEndpoint
from mcp_platform.transport.security import RequestGuard
from mcp_platform.transport.streaming import ResponseStreamer

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
span_tool_log = logging.getLogger("tests.span_tool")


@tool(description="Logs a line and answers.")
async def spanned_echo(text: str) -> str:
    span_tool_log.info("echoing %s", text)
    return text


@dataclass
class Timeline:
    """What happened, in order: the exports (with their spans) and the ASGI messages sent."""

    entries: list[tuple[str, Any]] = field(default_factory=list)

    def spans(self) -> list[Span]:
        return [span for kind, batch in self.entries if kind == "export" for span in batch]

    def index_of_last_byte(self) -> int:
        return next(
            i
            for i, (kind, message) in enumerate(self.entries)
            if kind == "send" and message["type"] == "http.response.body" and not message.get("more_body", False)
        )

    def index_of_export(self) -> int:
        return next(i for i, (kind, _) in enumerate(self.entries) if kind == "export")


class TimelineExporter:
    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline

    def export(self, spans: Sequence[Span]) -> None:
        self.timeline.entries.append(("export", list(spans)))


class NoEvents:
    def emit(self, event: ToolCallEvent) -> None:
        return None


@dataclass
class Served:
    app: McpEndpoint
    timeline: Timeline
    log: io.StringIO

    def post(self, body: dict[str, Any], accept: str = "application/json") -> Any:
        return asyncio.run(self._post(body, accept))

    async def _post(self, body: dict[str, Any], accept: str) -> Any:
        headers = {"accept": accept, "mcp-protocol-version": "2026-07-28", "mcp-method": body["method"]}
        if "name" in body["params"]:
            headers["mcp-name"] = body["params"]["name"]
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/mcp",
            "client": ("127.0.0.1", 50000),
            "headers": [(b"content-type", b"application/json")]
            + [(k.encode(), v.encode()) for k, v in headers.items()],
        }
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if delivered:
                await asyncio.Event().wait()
            delivered = True
            return {"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            self.timeline.entries.append(("send", message))

        await self.app(scope, receive, send)
        sent = [m for kind, m in self.timeline.entries if kind == "send" and m["type"] == "http.response.body"]
        return b"".join(m.get("body", b"") for m in sent).decode()


@pytest.fixture
def served() -> Iterator[Served]:
    timeline, log = Timeline(), io.StringIO()
    services = Services(store=InMemorySessions(), deps=None)
    server = McpServer(ToolCatalog([spanned_echo]), ToolCallRunner(services, NoEvents()), services=services)
    streamer = ResponseStreamer(spans=Spans(TimelineExporter(timeline)))
    app = McpEndpoint(server, LoopbackAuthenticator(), RequestGuard(), streamer)
    handler = logging.StreamHandler(log)
    handler.setFormatter(JsonLogFormatter("endpoint"))
    span_tool_log.addHandler(handler)
    span_tool_log.setLevel(logging.INFO)
    try:
        yield Served(app, timeline, log)
    finally:
        span_tool_log.removeHandler(handler)


def call(name: str, *, traceparent: str | None = f"00-{TRACE_ID}-{CALLER_SPAN}-01") -> dict[str, Any]:
    meta: dict[str, Any] = {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {}}
    if traceparent is not None:
        meta["traceparent"] = traceparent
    params = {"name": name, "arguments": {"text": "hi"}, "_meta": meta}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


@pytest.mark.parametrize("accept", ["application/json", "application/json, text/event-stream"], ids=["json", "sse"])
def test_a_tool_call_is_a_server_span_exported_before_the_last_byte(served: Served, accept: str) -> None:
    # Given a 2026 tools/call that names the caller's span
    # When the endpoint answers it, as plain JSON or as a stream
    answer = served.post(call("spanned_echo"), accept)
    assert '"hi"' in answer
    # Then one span was exported, and before the response's last byte
    (span,) = served.timeline.spans()
    assert served.timeline.index_of_export() < served.timeline.index_of_last_byte()
    # And it is the request's span: the ids of the tool's log line, the caller's span its parent
    (line,) = (json.loads(text) for text in served.log.getvalue().splitlines())
    assert (span.trace.trace_id, span.trace.span_id) == (line["trace_id"], line["span_id"])
    assert span.trace.trace_id == TRACE_ID and span.trace.parent_id == CALLER_SPAN
    # Named and attributed as the OpenTelemetry MCP conventions have it
    assert (span.name, span.kind, span.error_type) == ("tools/call spanned_echo", SpanKind.SERVER, None)
    assert span.attributes["mcp.method.name"] == "tools/call"
    assert span.attributes["gen_ai.tool.name"] == "spanned_echo"
    assert span.attributes["mcp.protocol.version"] == "2026-07-28"
    assert 0 < span.start_ns <= span.end_ns


def test_a_failed_call_is_a_span_with_its_error_type(served: Served) -> None:
    # When a tools/call names a tool the server does not have
    served.post(call("no_such_tool"))
    # Then its span says so, with the JSON-RPC error's code
    (span,) = served.timeline.spans()
    assert span.name == "tools/call no_such_tool"
    assert span.error_type is not None and span.error_type.lstrip("-").isdigit()


def test_a_request_without_a_caller_is_the_root_of_a_new_trace(served: Served) -> None:
    served.post(call("spanned_echo", traceparent=None))
    (span,) = served.timeline.spans()
    assert span.trace.parent_id is None and span.trace.trace_id != TRACE_ID
