"""How a response ends (S3, S7, K10): the result leaves first, then the events are flushed, then
the last byte; and past the stream duration cap only the cap's error leaves."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from mcp_platform.protocol.binding import BoundRequest
from mcp_platform.protocol.jsonrpc import LIMIT_EXCEEDED, JSONObject, Request
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.transport.messages import HttpRequest
from mcp_platform.transport.streaming import ResponseStreamer

CALL = Request(method="tools/call", params={"name": "slow", "arguments": {}}, id=7)


def http_request(accept: str) -> HttpRequest:
    return HttpRequest({"method": "POST", "path": "/mcp", "headers": [(b"accept", accept.encode())]})


def context() -> RequestContext:
    return RequestContext(principal="alice", protocol_version="2025-11-25", modern=False)


async def respond(streamer: ResponseStreamer, work: Any, accept: str) -> list[tuple[str, Any]]:
    """The response's ASGI messages and the flushes, in the order they happened."""
    timeline: list[tuple[str, Any]] = []

    async def admit() -> Any:
        return work

    async def send(message: dict[str, Any]) -> None:
        timeline.append(("send", message))

    async def flush() -> None:
        timeline.append(("flush", None))

    streamer.flush_events = flush
    bound = BoundRequest(request=CALL, admit=admit, streams=True)
    await streamer.respond(http_request(accept), bound, context(), send, {}, http_status_errors=False)
    return timeline


def messages_sent(timeline: list[tuple[str, Any]]) -> list[JSONObject]:
    """The JSON-RPC messages of the response's body (plain JSON or SSE ``data:`` lines)."""
    body = b"".join(m.get("body", b"") for kind, m in timeline if kind == "send" and m["type"].endswith("body"))
    text = body.decode()
    if text.startswith("{"):
        return [json.loads(text)]
    return [json.loads(line[len("data:") :]) for line in text.splitlines() if line.startswith("data:")]


def test_a_plain_json_result_leaves_before_the_flush_and_the_last_byte_after_it() -> None:
    # Given a call answered as plain JSON
    async def work() -> JSONObject:
        return {"content": []}

    # When it is answered
    timeline = asyncio.run(respond(ResponseStreamer(), work, "application/json"))

    # Then its body (with its Content-Length) leaves first, the events are flushed, and only then
    # is the response ended: no AWS round trip between the call and its answer
    kinds = [(kind, m and m["type"], m and m.get("more_body")) for kind, m in timeline]
    assert kinds == [
        ("send", "http.response.start", None),
        ("send", "http.response.body", True),
        ("flush", None, None),
        ("send", "http.response.body", False),
    ]
    assert messages_sent(timeline)[0]["result"] == {"content": []}


def test_a_streamed_result_leaves_before_the_flush_and_the_last_byte_after_it() -> None:
    # Given a call answered as an SSE stream
    async def work() -> JSONObject:
        return {"content": []}

    # When it is answered
    timeline = asyncio.run(respond(ResponseStreamer(), work, "application/json, text/event-stream"))

    # Then the final event precedes the flush, which precedes the end of the stream
    result_at = next(i for i, (kind, m) in enumerate(timeline) if kind == "send" and b'"result"' in m.get("body", b""))
    flush_at = next(i for i, (kind, _) in enumerate(timeline) if kind == "flush")
    assert result_at < flush_at == len(timeline) - 2
    assert timeline[-1][1] == {"type": "http.response.body", "body": b"", "more_body": False}


def test_past_the_stream_cap_a_result_that_became_ready_meanwhile_does_not_leave() -> None:
    # Given a stream capped at 0.2 s and a call whose result becomes ready only after the cap,
    # while the event loop was busy (so the stream's wait wakes to a ready result, not a timeout)
    streamer = ResponseStreamer(keepalive_seconds=0.1, max_stream_seconds=0.2)

    async def work() -> JSONObject:
        await asyncio.sleep(0.15)
        time.sleep(0.2)  # holds the loop past the cap, as a starved instance does
        return {"content": [], "isError": True}

    # When it is answered
    timeline = asyncio.run(respond(streamer, work, "application/json, text/event-stream"))

    # Then the one answer to the request is the cap's error (-31005), never the late result
    answers = [message for message in messages_sent(timeline) if message.get("id") == CALL.id]
    assert len(answers) == 1
    assert answers[0]["error"]["code"] == LIMIT_EXCEEDED and "duration cap" in answers[0]["error"]["message"]
