"""Protocol details a real client depends on: ids echoed on 2026 refusals, opt-in logging,
session checks on every 2025 message, idempotency keys that mean one request."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support.endpoint import AwsStack, Instance, endpoint_instance
from tests.support.mcp_http import (
    CAPS_META,
    MODERN,
    call,
    final_message,
    headers,
    initialize,
    modern_call,
    sse_messages,
)

pytestmark = pytest.mark.integration
LEGACY = "2025-11-25"


def notify(url: str, key: str, session_id: str, body: dict) -> httpx.Response:
    return httpx.post(
        url, headers=headers(key, **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": LEGACY}), json=body
    )


@pytest.mark.parametrize(
    ("version", "method_header", "code"),
    [(MODERN, "tools/call", -32020), ("2099-01-01", "tools/list", -32022)],
    ids=["header-mismatch", "unsupported-version"],
)
def test_2026_envelope_refusals_echo_the_request_id(
    instance: Instance, api_key: str, version, method_header, code
) -> None:
    """JSON-RPC: an error answers the request's id whenever it could be read."""
    meta = {**CAPS_META, "io.modelcontextprotocol/protocolVersion": version}
    response = httpx.post(
        instance.url,
        headers=headers(api_key, **{"MCP-Protocol-Version": version, "Mcp-Method": method_header}),
        json={"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta}},
    )
    assert response.status_code == 400 and response.json()["error"]["code"] == code
    assert response.json()["id"] == 7


def test_2026_log_notifications_only_on_opt_in(instance: Instance, api_key: str) -> None:
    """2026-07-28: without _meta logLevel no notifications/message; an invalid level is -32602."""
    params = {"name": "countdown", "arguments": {"steps": 2, "interval_ms": 0}}
    silent = modern_call(instance.url, api_key, 1, "tools/call", {**params, "_meta": CAPS_META})
    assert "notifications/message" not in [m.get("method") for m in sse_messages(silent)]
    opted = modern_call(
        instance.url,
        api_key,
        2,
        "tools/call",
        {**params, "_meta": {**CAPS_META, "io.modelcontextprotocol/logLevel": "info"}},
    )
    assert "notifications/message" in [m.get("method") for m in sse_messages(opted)]
    bad = modern_call(
        instance.url,
        api_key,
        3,
        "tools/call",
        {**params, "_meta": {**CAPS_META, "io.modelcontextprotocol/logLevel": "loud"}},
    )
    assert bad.status_code == 400 and bad.json()["error"]["code"] == -32602 and bad.json()["id"] == 3


def test_2025_notifications_check_the_session_and_its_owner(instance: Instance, api_key: str, mint_key) -> None:
    """Every message with an unknown or foreign Mcp-Session-Id is 404, notifications included."""
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert notify(instance.url, api_key, "no-such-session", initialized).status_code == 404
    session_id = initialize(instance.url, api_key)
    assert notify(instance.url, mint_key("mallory"), session_id, initialized).status_code == 404
    assert notify(instance.url, api_key, session_id, initialized).status_code == 202


class StreamedCall:
    """A 2025 tools/call streamed in a thread. The test waits on what the stream has shown
    (progress so far, its end), never on a fixed sleep."""

    def __init__(self, url: str, key: str, session_id: str, request_id: int, params: dict[str, Any]) -> None:
        self.url = url
        self.headers = headers(key, **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": LEGACY})
        self.body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        self.received = b""
        self.ended = False
        self.failure: Exception | None = None  # a stream that broke is not one the server ended
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._consume, daemon=True)

    def start(self) -> StreamedCall:
        self._thread.start()
        return self

    @property
    def progress(self) -> int:
        return self.received.count(b'"notifications/progress"')

    def wait_until(self, seen: Callable[[], bool], timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(seen, timeout)

    def _consume(self) -> None:
        try:
            with httpx.stream("POST", self.url, headers=self.headers, json=self.body, timeout=60) as response:
                for chunk in response.iter_raw():
                    with self._changed:
                        self.received += chunk
                        self._changed.notify_all()
        except Exception as exc:  # kept for the test to report: a broken stream also ends
            self.failure = exc
        finally:
            with self._changed:
                self.ended = True
                self._changed.notify_all()


def test_another_principal_cannot_cancel_my_call(aws: AwsStack, api_key: str, mint_key: Callable[[str], str]) -> None:
    """Given alice's countdown streamed on instance A (2025 SSE) and seen to progress, when eve
    posts notifications/cancelled for it with alice's session id, to A (where the call runs) and
    to B (another instance, which would leave a cancel flag), then both answer 404 and the call
    keeps progressing for more than two cancel-flag polls. When alice then cancels it through B,
    the call stops without a result: it was cancellable all along, only eve's attempts were not."""
    eve = mint_key("eve")
    with (
        endpoint_instance(aws, MCP_CANCEL_POLL_SECONDS="1") as a,
        endpoint_instance(aws, MCP_CANCEL_POLL_SECONDS="1") as b,
    ):
        session_id = initialize(a.url, api_key)
        # 100 steps of 100 ms: about 10 s, far longer than every wait below.
        arguments = {"steps": 100, "interval_ms": 100}
        params = {"name": "countdown", "arguments": arguments, "_meta": {"progressToken": "t99"}}
        streamed = StreamedCall(a.url, api_key, session_id, 99, params).start()
        assert streamed.wait_until(lambda: streamed.progress >= 1, timeout=10), "the call never reported progress"

        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}
        assert notify(a.url, eve, session_id, cancel).status_code == 404
        assert notify(b.url, eve, session_id, cancel).status_code == 404
        refused_at = streamed.progress
        # 25 more steps (at least 2.5 s) span two 1 s polls: a flag eve had left would have been
        # read and a local cancellation would have ended the stream long before.
        went_on = streamed.wait_until(lambda: streamed.ended or streamed.progress >= refused_at + 25, timeout=10)
        assert went_on and not streamed.ended, "eve's cancellation stopped alice's call"

        assert notify(b.url, api_key, session_id, cancel).status_code == 202
        # Honoured on A's next poll (1 s); not honoured, the call would run about 7 s more.
        assert streamed.wait_until(lambda: streamed.ended, timeout=5), "alice's cancellation was not honoured"
        assert streamed.failure is None, f"the stream broke: {streamed.failure!r}"
        assert b'"id":99' not in streamed.received  # cancelled: no response (2025 spec)
        assert streamed.progress < 100


def test_unknown_session_is_404_even_when_the_arguments_are_invalid(instance: Instance, api_key: str) -> None:
    bad_arguments = {"name": "append_note", "arguments": {"text": 42}}
    assert call(instance.url, api_key, "no-such-session", 5, "tools/call", bad_arguments).status_code == 404


def test_an_application_handle_is_not_an_mcp_session_id(instance: Instance, api_key: str) -> None:
    """Handles from open_session address application sessions only; as Mcp-Session-Id → 404."""
    opened = final_message(
        modern_call(
            instance.url, api_key, 1, "tools/call", {"name": "open_session", "arguments": {}, "_meta": CAPS_META}
        )
    )
    handle = opened["result"]["structuredContent"]["session"]
    assert call(instance.url, api_key, handle, 2, "ping").status_code == 404
    deleted = httpx.delete(instance.url, headers=headers(api_key, **{"Mcp-Session-Id": handle}))
    assert deleted.status_code == 404


def test_idempotency_key_means_one_request(instance: Instance, api_key: str) -> None:
    """A key reused with other arguments is -32602 (never a silent replay); a key on a tool
    without a session is refused rather than ignored."""
    opened = final_message(
        modern_call(
            instance.url, api_key, 1, "tools/call", {"name": "open_session", "arguments": {}, "_meta": CAPS_META}
        )
    )
    handle = opened["result"]["structuredContent"]["session"]
    meta = {**CAPS_META, "dev.mcp-platform/idempotencyKey": "k-1"}
    first = {"name": "append_note", "arguments": {"text": "a", "session": handle}, "_meta": meta}
    assert "result" in final_message(modern_call(instance.url, api_key, 2, "tools/call", first))
    changed = {"name": "append_note", "arguments": {"text": "b", "session": handle}, "_meta": meta}
    refused = modern_call(instance.url, api_key, 3, "tools/call", changed)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == -32602
    sessionless = modern_call(
        instance.url, api_key, 4, "tools/call", {"name": "open_session", "arguments": {}, "_meta": meta}
    )
    assert sessionless.status_code == 400 and sessionless.json()["error"]["code"] == -32602


def test_prompts_get_and_resources_read_answer_unknown_names(instance: Instance, api_key: str) -> None:
    """Advertised capabilities answer unknown names with invalid params (2026) / resource not
    found (2025), not method-not-found."""
    session_id = initialize(instance.url, api_key)
    prompt = call(instance.url, api_key, session_id, 1, "prompts/get", {"name": "nope"}).json()
    assert prompt["error"]["code"] == -32602
    resource = call(instance.url, api_key, session_id, 2, "resources/read", {"uri": "x://nope"}).json()
    assert resource["error"]["code"] == -32002
    modern = modern_call(instance.url, api_key, 3, "resources/read", {"uri": "x://nope", "_meta": CAPS_META})
    assert modern.status_code == 400 and modern.json()["error"]["code"] == -32602
