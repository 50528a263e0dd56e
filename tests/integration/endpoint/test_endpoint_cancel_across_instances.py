"""2025 cancellation across instances: notifications/cancelled posted to B stops a call on A.

On Lambda one execution environment serves one request at a time, so the client's cancellation
lands on another instance than the one streaming the call. Two endpoint instances share one
moto table, as two environments share the DynamoDB table.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support.endpoint import AwsStack, Instance, endpoint_instance
from tests.support.mcp_http import headers, initialize

pytestmark = pytest.mark.integration

LEGACY = "2025-11-25"


def legacy_headers(key: str, session_id: str) -> dict[str, str]:
    return headers(key, **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": LEGACY})


def cancel(url: str, key: str, session_id: str, request_id: Any) -> httpx.Response:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
    return httpx.post(url, headers=legacy_headers(key, session_id), json=body, timeout=30)


class StreamedCountdown:
    """A countdown streamed over 2025 SSE in a thread, recording every chunk and when it ended."""

    def __init__(self, instance: Instance, key: str, session_id: str, request_id: int, steps: int, interval_ms: int):
        arguments = {"steps": steps, "interval_ms": interval_ms}
        params = {"name": "countdown", "arguments": arguments, "_meta": {"progressToken": f"t{request_id}"}}
        self.body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        self.url, self.headers = instance.url, legacy_headers(key, session_id)
        self.chunks: list[bytes] = []
        self.progressing = threading.Event()
        self.ended_at = 0.0
        self.thread = threading.Thread(target=self._consume)

    def _consume(self) -> None:
        with httpx.stream("POST", self.url, headers=self.headers, json=self.body, timeout=60) as response:
            for chunk in response.iter_raw():
                self.chunks.append(chunk)
                if b"notifications/progress" in chunk:
                    self.progressing.set()
        self.ended_at = time.monotonic()

    def start(self) -> StreamedCountdown:
        self.thread.start()
        assert self.progressing.wait(10), "the call never reported progress"
        return self

    @property
    def text(self) -> str:
        return b"".join(self.chunks).decode()


def test_cancel_posted_to_another_instance_stops_the_call(aws: AwsStack, api_key: str) -> None:
    """Given a 10 s countdown streamed on instance A (2025 SSE), when notifications/cancelled
    for it is posted to instance B, then B answers 202, A's call stops within a few seconds
    (one 1 s poll of the cancel flag) and A sends no result for the request."""
    with (
        endpoint_instance(aws, MCP_CANCEL_POLL_SECONDS="1") as a,
        endpoint_instance(aws, MCP_CANCEL_POLL_SECONDS="1") as b,
    ):
        session_id = initialize(a.url, api_key)
        call = StreamedCountdown(a, api_key, session_id, 41, steps=100, interval_ms=100).start()
        assert cancel(b.url, api_key, session_id, 41).status_code == 202
        cancelled_at = time.monotonic()
        call.thread.join(timeout=5)
        assert not call.thread.is_alive(), "A's call went on after the cancellation reached B"
        assert call.ended_at - cancelled_at < 4
        assert '"id":41' not in call.text  # cancelled: no response (2025 spec)
        assert call.text.count("notifications/progress") < 100


def test_a_cancel_for_another_request_leaves_the_call_alone(aws: AwsStack, api_key: str) -> None:
    """Given a 2.5 s countdown streamed on A, when B receives a cancellation for a different
    request id ("42", the string, while the call's id is the number 42), then A's call completes
    with its result."""
    with (
        endpoint_instance(aws, MCP_CANCEL_POLL_SECONDS="1") as a,
        endpoint_instance(aws, MCP_CANCEL_POLL_SECONDS="1") as b,
    ):
        session_id = initialize(a.url, api_key)
        call = StreamedCountdown(a, api_key, session_id, 42, steps=5, interval_ms=500).start()
        assert cancel(b.url, api_key, session_id, "42").status_code == 202
        call.thread.join(timeout=15)
        assert '"id":42' in call.text and "counted 5 steps" in call.text


def test_only_the_session_owner_can_cancel(aws: AwsStack, api_key: str, mint_key: Callable[[str], str]) -> None:
    """Given alice's 2.5 s countdown streamed on A, when bob posts notifications/cancelled for
    it to B with alice's session id, then bob gets 404 (not his session) and alice's call
    completes with its result."""
    bob = mint_key("bob")
    with (
        endpoint_instance(aws, MCP_CANCEL_POLL_SECONDS="1") as a,
        endpoint_instance(aws, MCP_CANCEL_POLL_SECONDS="1") as b,
    ):
        session_id = initialize(a.url, api_key)
        call = StreamedCountdown(a, api_key, session_id, 43, steps=5, interval_ms=500).start()
        assert cancel(b.url, bob, session_id, 43).status_code == 404
        call.thread.join(timeout=15)
        assert '"id":43' in call.text and "counted 5 steps" in call.text


@pytest.mark.parametrize("request_id", [{"id": 1}, [1], True, 1.5], ids=["dict", "list", "bool", "float"])
def test_malformed_request_id_is_a_400_never_a_server_error(instance: Instance, api_key: str, request_id: Any) -> None:
    """Given a 2025 session, when notifications/cancelled carries a requestId that no request
    can have (JSON-RPC ids are strings or integers), then the answer is 400 with a JSON-RPC
    invalid-params error, not a 5xx."""
    session_id = initialize(instance.url, api_key)
    response = cancel(instance.url, api_key, session_id, request_id)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == -32602


def test_cancel_without_request_id_is_accepted(instance: Instance, api_key: str) -> None:
    """Given a 2025 session, when notifications/cancelled has no requestId (optional since
    2025-11-25, where tasks are cancelled otherwise), then it is accepted (202): nothing to stop."""
    session_id = initialize(instance.url, api_key)
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "user"}}
    response = httpx.post(instance.url, headers=legacy_headers(api_key, session_id), json=body, timeout=30)
    assert response.status_code == 202
