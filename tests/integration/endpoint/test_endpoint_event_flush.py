"""No lost tool-call events: each path flushes inside the invocation that produced the event.

Behind the Lambda Web Adapter the invocation ends with the response's last byte, and SIGTERM
comes about 300 ms before SIGKILL. So for every path (JSON, SSE, cancel, duration cap) the
event must have reached Kinesis (or the producer DLQ) *before* the response's final ASGI
message, and on shutdown before ``lifespan.shutdown.complete``. A timeline records the ASGI
messages and the AWS calls (answered by moto) in the order they happened.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

from mcp_platform.bootstrap.endpoint import build_app
from tests.support import platform_tools
from tests.support.endpoint import AwsStack
from tests.support.kinesis import read_whole_stream
from tests.support.mcp_http import final_message, headers, initialize, sse_messages
from tests.support.servers import serve
from tests.support.timeline import Timeline
from tests.support.wire import WireRecorder

pytestmark = pytest.mark.integration

LEGACY = "2025-11-25"


@dataclass
class Traced:
    url: str
    timeline: Timeline
    recorder: WireRecorder
    dynamodb: Any
    kinesis: Any
    sqs: Any


@contextlib.contextmanager
def traced_endpoint(aws: AwsStack, **overrides: str) -> Iterator[Traced]:
    """The endpoint as build_app composes it, on uvicorn with lifespan on (as run.sh), with
    its own clients so that faults and timeline hooks touch this test only."""
    dynamodb, kinesis, sqs = aws.client("dynamodb"), aws.client("kinesis"), aws.client("sqs")
    timeline = Timeline()
    timeline.watch_kinesis(kinesis)
    timeline.watch_sqs(sqs)
    app = build_app(aws.settings(**overrides), platform_tools, dynamodb=dynamodb, kinesis=kinesis, sqs=sqs)
    recorder = WireRecorder(app)
    with serve(timeline.app(recorder)) as base:
        yield Traced(f"{base}/mcp", timeline, recorder, dynamodb, kinesis, sqs)


class Refusal:
    """A botocore hook that makes one operation fail with ``code`` until switched off."""

    def __init__(self, client: Any, event: str, code: str) -> None:
        self.on = True
        self.code = code
        self.operation = event.rsplit(".", 1)[-1]
        client.meta.events.register(f"before-call.{event}", self)

    def __call__(self, **kwargs: Any) -> None:
        if self.on:
            raise ClientError({"Error": {"Code": self.code, "Message": "injected"}}, self.operation)


class SlowCommits:
    """Holds every TransactWriteItems for ``seconds`` (in the worker thread), so that a
    cancellation or the duration cap arrives while the commit is in flight."""

    def __init__(self, dynamodb: Any, seconds: float) -> None:
        self.seconds = seconds
        self.started = threading.Event()
        dynamodb.meta.events.register("before-call.dynamodb.TransactWriteItems", self)

    def __call__(self, **kwargs: Any) -> None:
        self.started.set()
        threading.Event().wait(self.seconds)


def note_call(request_id: str, text: str) -> dict[str, Any]:
    params = {"name": "append_note", "arguments": {"text": text}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def legacy_headers(key: str, session_id: str, accept: str = "application/json, text/event-stream") -> dict[str, str]:
    return headers(key, Accept=accept, **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": LEGACY})


def assert_delivered_before_last_byte(traced: Traced, session_id: str, marker: bytes) -> str:
    """The call's event was accepted by Kinesis or the DLQ before its response ended; returns
    which of the two took it."""
    timeline = traced.timeline
    last_byte = timeline.index_of_last_byte(timeline.request_number(marker))
    delivered = timeline.index_of_delivery(session_id=session_id, tool="append_note")
    assert delivered < last_byte, f"delivered at {delivered}, last byte at {last_byte}: {timeline.entries}"
    return timeline.entries[delivered].kind


@pytest.mark.parametrize("kinesis_refuses", [False, True], ids=["to-stream", "to-dlq"])
def test_json_answer_is_followed_by_the_flush_then_the_last_byte(
    aws: AwsStack, api_key: str, kinesis_refuses: bool
) -> None:
    """Given a 2025 client that accepts only JSON (and, in one case, Kinesis refusing every
    PutRecords), when it calls append_note, then it gets the whole JSON answer, and the call's
    event reached the stream (or the producer DLQ) before the response's last ASGI message."""
    with traced_endpoint(aws) as traced:
        if kinesis_refuses:
            Refusal(traced.kinesis, "kinesis.PutRecords", "AccessDeniedException")
        session_id = initialize(traced.url, api_key)
        response = httpx.post(
            traced.url,
            headers=legacy_headers(api_key, session_id, accept="application/json"),
            json=note_call("json-1", "json path"),
            timeout=30,
        )
        assert response.headers["content-type"] == "application/json"
        assert int(response.headers["content-length"]) == len(response.content)
        assert response.json()["result"]["structuredContent"] == {"appended": 1}
        taken_by = assert_delivered_before_last_byte(traced, session_id, b"json path")
        assert traced.recorder.validate_all() > 0
    if kinesis_refuses:
        assert taken_by == "SendMessageBatch"
    else:
        assert taken_by == "PutRecords"
        on_stream = [json.loads(r["Data"]) for r in read_whole_stream(aws.client("kinesis"), aws.stream)]
        assert any(e.get("session_id") == session_id and e.get("tool") == "append_note" for e in on_stream)


def test_streamed_result_is_followed_by_the_flush_then_the_last_byte(aws: AwsStack, api_key: str) -> None:
    """Given a 2025 client accepting SSE, when append_note completes, then the result event is
    sent, and the call's event reached the stream before the stream's last ASGI message."""
    with traced_endpoint(aws) as traced:
        session_id = initialize(traced.url, api_key)
        response = httpx.post(
            traced.url, headers=legacy_headers(api_key, session_id), json=note_call("sse-1", "sse path"), timeout=30
        )
        assert response.headers["content-type"] == "text/event-stream"
        assert final_message(response)["result"]["structuredContent"] == {"appended": 1}
        assert assert_delivered_before_last_byte(traced, session_id, b"sse path") == "PutRecords"


def test_cancelled_call_with_its_commit_in_flight_flushes_before_the_last_byte(aws: AwsStack, api_key: str) -> None:
    """Given append_note whose commit is still in flight (TransactWriteItems held 1.5 s), when
    notifications/cancelled arrives, then no response is sent for the request, the shielded
    commit completes, and its event reached the stream before the stream's last byte."""
    with traced_endpoint(aws) as traced:
        commits = SlowCommits(traced.dynamodb, 1.5)
        session_id = initialize(traced.url, api_key)
        chunks: list[bytes] = []

        def consume() -> None:
            body = note_call("cancel-1", "cancel path")
            with httpx.stream("POST", traced.url, headers=legacy_headers(api_key, session_id), json=body) as response:
                chunks.extend(response.iter_raw())

        reader = threading.Thread(target=consume)
        reader.start()
        assert commits.started.wait(10), "the commit never started"
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "cancel-1"}}
        assert httpx.post(traced.url, headers=legacy_headers(api_key, session_id), json=cancel).status_code == 202
        reader.join(timeout=15)
        assert not reader.is_alive(), "the stream did not end after cancellation"
        assert b'"id":"cancel-1"' not in b"".join(chunks)  # cancelled: no response (2025 spec)
        assert assert_delivered_before_last_byte(traced, session_id, b"cancel path") == "PutRecords"


def test_duration_cap_with_a_commit_in_flight_flushes_before_the_last_byte(aws: AwsStack, api_key: str) -> None:
    """Given a 2 s stream cap and append_note whose commit is held 3 s, when the cap ends the
    stream, then the client gets the cap error, and the commit's event reached the stream
    before the stream's last byte."""
    with traced_endpoint(aws, MCP_STREAM_MAX_SECONDS="2", MCP_KEEPALIVE_SECONDS="1") as traced:
        SlowCommits(traced.dynamodb, 3.0)
        session_id = initialize(traced.url, api_key)
        response = httpx.post(
            traced.url, headers=legacy_headers(api_key, session_id), json=note_call("cap-1", "cap path"), timeout=30
        )
        final = final_message(response)
        assert final["id"] == "cap-1" and "duration cap" in final["error"]["message"]
        assert assert_delivered_before_last_byte(traced, session_id, b"cap path") == "PutRecords"


def test_shutdown_flushes_what_a_failed_flush_kept_before_completing(aws: AwsStack, api_key: str) -> None:
    """Given a call whose own flush failed entirely (Kinesis and the producer DLQ both refused,
    so the producer kept the event), when the server shuts down (lifespan.shutdown, what
    SIGTERM triggers), then the event reaches the stream before lifespan.shutdown.complete."""
    with traced_endpoint(aws) as traced:
        kinesis_down = Refusal(traced.kinesis, "kinesis.PutRecords", "AccessDeniedException")
        dlq_down = Refusal(traced.sqs, "sqs.SendMessageBatch", "AccessDenied")
        session_id = initialize(traced.url, api_key)
        response = httpx.post(
            traced.url,
            headers=legacy_headers(api_key, session_id),
            json=note_call("down-1", "shutdown path"),
            timeout=30,
        )
        assert final_message(response)["result"]["structuredContent"] == {"appended": 1}
        traced.timeline.index_of_last_byte(traced.timeline.request_number(b"shutdown path"))  # its flush is over
        with pytest.raises(AssertionError, match="no delivered event"):
            traced.timeline.index_of_delivery(0.5, session_id=session_id)  # nothing took it: still buffered
        kinesis_down.on = dlq_down.on = False
    # The server has shut down (uvicorn ran the lifespan shutdown on leaving the block).
    timeline = traced.timeline
    delivered = timeline.index_of_delivery(session_id=session_id, tool="append_note")
    assert timeline.entries[delivered].kind == "PutRecords"
    assert delivered < timeline.index_of("lifespan", "lifespan.shutdown.complete"), timeline.entries


def test_streamed_call_messages_validate(aws: AwsStack, api_key: str) -> None:
    """The reordered endings still produce valid messages: a streamed result and a JSON answer
    on one instance pass the official models, and each response ends exactly once."""
    with traced_endpoint(aws) as traced:
        session_id = initialize(traced.url, api_key)
        streamed = httpx.post(
            traced.url, headers=legacy_headers(api_key, session_id), json=note_call("v-1", "valid sse"), timeout=30
        )
        plain = httpx.post(
            traced.url,
            headers=legacy_headers(api_key, session_id, accept="application/json"),
            json=note_call("v-2", "valid json"),
            timeout=30,
        )
        assert [m["id"] for m in sse_messages(streamed) if "id" in m] == ["v-1"]
        assert plain.json()["id"] == "v-2"
        assert traced.recorder.validate_all() >= 3
    for marker in (b"valid sse", b"valid json"):
        request = traced.timeline.request_number(marker)
        endings = [e for e in traced.timeline.entries if e.request == request and e.kind == "send" and not e.more_body]
        assert [e.message_type for e in endings] == ["http.response.start", "http.response.body"]
