"""A request's trace, from its ``_meta`` or its ``traceparent`` header, in both protocol eras: the
endpoint makes the request's span, every log and metric line written for the request carries its
ids, and so does the tool-call event; a bad value starts a new trace, never an error."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from mcp_platform.application.auth.loopback import LoopbackAuthenticator
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.application.metrics import OPERATION_DURATION, JsonLogFormatter, MetricsWriter
from mcp_platform.application.server import McpServer
from mcp_platform.application.services import Services
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol import trace_context
from mcp_platform.protocol.tools import ToolCatalog, tool
from mcp_platform.protocol.versions import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_platform.testing import InMemorySessions
from mcp_platform.transport.endpoint import McpEndpoint
from mcp_platform.transport.messages import HttpRequest
from mcp_platform.transport.security import RequestGuard
from mcp_platform.transport.streaming import ResponseStreamer

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CALLER_SPAN}-01"
HEADER_TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
HEADER_TRACEPARENT = f"00-{HEADER_TRACE_ID}-b7ad6b7169203331-01"
tool_log = logging.getLogger("tests.traced_tool")


@tool(description="Logs a line and answers.")
async def traced_echo(text: str) -> str:
    tool_log.info("echoing %s", text)
    return text


@dataclass
class Events:
    """The event sink: what the producer would put on the stream."""

    records: list[bytes] = field(default_factory=list)

    def emit(self, event: ToolCallEvent) -> None:
        self.records.append(event.to_bytes())


@dataclass
class Served:
    app: McpEndpoint
    events: Events
    emf: io.StringIO
    log: io.StringIO

    def post(
        self, body: dict[str, Any], headers: dict[str, str], accept: str = "application/json"
    ) -> tuple[int, dict[str, str], Any]:
        return asyncio.run(_post(self.app, body, {"accept": accept, **headers}))

    def log_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.getvalue().splitlines()]

    def operation_lines(self) -> list[dict[str, Any]]:
        lines = (json.loads(line) for line in self.emf.getvalue().splitlines())
        return [line for line in lines if OPERATION_DURATION in line]


@pytest.fixture
def served() -> Iterator[Served]:
    events, emf, log = Events(), io.StringIO(), io.StringIO()
    services = Services(store=InMemorySessions(), deps=None)
    server = McpServer(ToolCatalog([traced_echo]), ToolCallRunner(services, events), services=services)
    streamer = ResponseStreamer(MetricsWriter("Test", "endpoint", emf))
    app = McpEndpoint(server, LoopbackAuthenticator(), RequestGuard(), streamer)
    handler = logging.StreamHandler(log)
    handler.setFormatter(JsonLogFormatter("endpoint"))
    tool_log.addHandler(handler)
    tool_log.setLevel(logging.INFO)
    try:
        yield Served(app, events, emf, log)
    finally:
        tool_log.removeHandler(handler)


async def _post(app: McpEndpoint, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
    raw = json.dumps(body).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "client": ("127.0.0.1", 50000),
        "headers": [
            (b"content-type", b"application/json"),
            *((name.encode(), value.encode()) for name, value in headers.items()),
        ],
    }
    delivered = False
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if delivered:
            await asyncio.Event().wait()  # the client stays: no disconnect
        delivered = True
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body_bytes = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    response_headers = {k.decode(): v.decode() for k, v in start["headers"]}
    if response_headers.get("content-type") == "text/event-stream":
        return start["status"], response_headers, body_bytes.decode()
    return start["status"], response_headers, json.loads(body_bytes) if body_bytes else None


def modern_call(meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    envelope = {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {}}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "traced_echo", "arguments": {"text": "hi"}, "_meta": {**envelope, **meta}},
    }
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "traced_echo"}
    return body, headers


def legacy_session(served: Served) -> str:
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    status, headers, _ = served.post(initialize, {})
    assert status == 200
    return headers["mcp-session-id"]


def legacy_call(meta: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "traced_echo", "arguments": {"text": "hi"}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


def assert_one_trace(served: Served, trace_id: str) -> str:
    """The event, the tool's log line and the request's metric line name one trace and one span
    (the request's, never the caller's); returns the span."""
    (event,) = (ToolCallEvent.from_bytes(record) for record in served.events.records)
    (log_line,) = served.log_lines()
    (operation,) = served.operation_lines()
    assert event.trace_id == log_line["trace_id"] == operation["trace_id"] == trace_id
    assert event.span_id == log_line["span_id"] == operation["span_id"] != CALLER_SPAN
    assert event.span_id is not None and trace_context.is_span_id(event.span_id)
    return event.span_id


def test_2026_a_traceparent_in_meta_reaches_the_log_line_the_metric_line_and_the_event(served: Served) -> None:
    # Given a 2026 tools/call whose _meta names the caller's span (and a header naming another)
    body, headers = modern_call({"traceparent": TRACEPARENT, "tracestate": "rojo=1"})
    # When the endpoint serves it
    status, _, answer = served.post(body, {**headers, "traceparent": HEADER_TRACEPARENT})
    # Then it is answered, and _meta's trace is on every line of the request and on its event
    assert status == 200 and answer["result"]["content"][0]["text"] == "hi"
    assert_one_trace(served, TRACE_ID)
    assert trace_context.current() is None  # the request's scope ended with it


@pytest.mark.parametrize("accept", ["application/json", "application/json, text/event-stream"], ids=["json", "sse"])
def test_2025_a_traceparent_in_meta_reaches_the_log_line_the_metric_line_and_the_event(
    served: Served, accept: str
) -> None:
    # Given a 2025 session, and a tools/call whose _meta names the caller's span
    session_id = legacy_session(served)
    # When the endpoint serves it, as a JSON answer or as a stream (the tool runs in a task then)
    headers = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
    status, _, answer = served.post(legacy_call({"traceparent": TRACEPARENT}), headers, accept)
    # Then the trace is on every line of the request and on its event
    assert status == 200 and '"result"' in (answer if isinstance(answer, str) else json.dumps(answer))
    assert_one_trace(served, TRACE_ID)


@pytest.mark.parametrize("era", ["2025", "2026"])
def test_the_header_is_the_fallback_in_both_eras(served: Served, era: str) -> None:
    # Given a tools/call without a traceparent in _meta and with a traceparent header
    if era == "2026":
        body, headers = modern_call({})
    else:
        body = legacy_call({})
        headers = {"mcp-session-id": legacy_session(served), "mcp-protocol-version": "2025-11-25"}
    # When the endpoint serves it
    status, _, _ = served.post(body, {**headers, "traceparent": HEADER_TRACEPARENT})
    # Then the header's trace is the request's
    assert status == 200
    assert_one_trace(served, HEADER_TRACE_ID)


@pytest.mark.parametrize("meta_value", ["00-zz", 42, f"00-{'0' * 32}-{CALLER_SPAN}-01", TRACEPARENT.upper()], ids=str)
def test_a_bad_traceparent_starts_a_new_trace_and_the_call_succeeds(served: Served, meta_value: Any) -> None:
    # Given a 2026 tools/call whose _meta and header traceparents are both malformed
    body, headers = modern_call({"traceparent": meta_value})
    # When the endpoint serves it
    status, _, answer = served.post(body, {**headers, "traceparent": "garbage"})
    # Then it is answered as any call, under a new trace that every line and the event share
    assert status == 200 and answer["result"]["content"][0]["text"] == "hi"
    (event,) = (ToolCallEvent.from_bytes(record) for record in served.events.records)
    assert event.trace_id not in (None, TRACE_ID) and trace_context.is_trace_id(event.trace_id)
    assert_one_trace(served, str(event.trace_id))


def test_two_traceparent_headers_name_no_parent_and_tracestate_headers_are_one_list() -> None:
    # Given a request with the traceparent header twice, and one with two tracestate headers
    twice = HttpRequest({"method": "POST", "path": "/mcp", "headers": [(b"traceparent", TRACEPARENT.encode())] * 2})
    split = HttpRequest(
        {
            "method": "POST",
            "path": "/mcp",
            "headers": [
                (b"traceparent", TRACEPARENT.encode()),
                (b"tracestate", b"rojo=1"),
                (b"TraceState", b"congo=2"),
            ],
        }
    )
    # When their spans are made
    from mcp_platform.transport.endpoint import request_trace

    repeated, joined = request_trace(twice, {}), request_trace(split, {})
    # Then W3C's reading holds: two traceparents are no parent; tracestate values are one list
    assert repeated.trace_id != TRACE_ID and repeated.parent_id is None
    assert joined.trace_id == TRACE_ID and joined.state == "rojo=1,congo=2"
