"""Sessions survive any instance: two endpoint processes' worth of app share one table."""

from __future__ import annotations

import httpx
import pytest

from tests.support.endpoint import AwsStack, endpoint_instance
from tests.support.mcp_http import call, final_message, headers, initialize

pytestmark = pytest.mark.integration


def test_session_created_on_one_instance_is_used_and_deleted_through_the_other(aws: AwsStack, api_key: str) -> None:
    """Given instances A and B sharing one ThreadedMotoServer, when a session is created on A,
    then B serves it (state included), B's DELETE ends it, and A answers 404 afterwards."""
    with endpoint_instance(aws) as a, endpoint_instance(aws) as b:
        session_id = initialize(a.url, api_key)
        final_message(
            call(a.url, api_key, session_id, 1, "tools/call", {"name": "append_note", "arguments": {"text": "from A"}})
        )
        notes = final_message(call(b.url, api_key, session_id, 2, "tools/call", {"name": "read_notes"}))
        assert [n["text"] for n in notes["result"]["structuredContent"]["notes"]] == ["from A"]
        deleted = httpx.delete(b.url, headers=headers(api_key, **{"Mcp-Session-Id": session_id}))
        assert deleted.status_code == 200
        assert call(a.url, api_key, session_id, 3, "ping").status_code == 404
        assert call(b.url, api_key, session_id, 4, "ping").status_code == 404
        assert a.recorder.validate_all() > 0 and b.recorder.validate_all() > 0


def test_streamed_call_sends_headers_and_first_event_before_slow_work(aws: AwsStack, api_key: str) -> None:
    """S2/S4/S7: a 1.2 s tool streams: status + text/event-stream headers and a first event
    arrive long before the result; keep-alive comments fill the silence; the stream ends."""
    with endpoint_instance(aws) as running:
        session_id = initialize(running.url, api_key)
        body = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "countdown", "arguments": {"steps": 1, "interval_ms": 1200}},
        }
        request_headers = headers(api_key, **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"})
        with httpx.stream("POST", running.url, headers=request_headers, json=body, timeout=30) as response:
            assert response.headers["content-type"] == "text/event-stream"
            assert response.headers["cache-control"] == "no-cache"
            assert response.headers["x-accel-buffering"] == "no"
            chunks = list(response.iter_raw())
        # Ordering, not timing: the first chunk left before the tool finished (it holds no
        # result), a keep-alive filled the 1.2 s silence, and the result came last.
        assert chunks[0].startswith(b": stream open") and b"counted" not in chunks[0]
        text = b"".join(chunks).decode()
        assert text.index(": keep-alive") < text.index('"counted 1 steps"')


def test_stream_duration_cap_ends_a_runaway_call(aws: AwsStack, api_key: str) -> None:
    """S7/S3: a call running past the server-side cap gets an error event and the stream is
    closed, instead of running into the function timeout."""
    with endpoint_instance(aws, MCP_STREAM_MAX_SECONDS="2", MCP_KEEPALIVE_SECONDS="1") as running:
        session_id = initialize(running.url, api_key)
        params = {"name": "countdown", "arguments": {"steps": 1, "interval_ms": 8000}}
        response = call(running.url, api_key, session_id, 11, "tools/call", params)
        assert response.headers["content-type"] == "text/event-stream"
        final = final_message(response)
        assert final["id"] == 11 and "duration cap" in final["error"]["message"]


def test_concurrent_retries_of_one_call_commit_once(aws: AwsStack, api_key: str) -> None:
    """D4/D10 through the endpoint: five concurrent copies of the same request (same id, same
    session) yield one committed note and the same result for every copy."""
    from concurrent.futures import ThreadPoolExecutor

    with endpoint_instance(aws) as running:
        session_id = initialize(running.url, api_key)
        params = {"name": "append_note", "arguments": {"text": "racy"}}
        with ThreadPoolExecutor(5) as pool:
            responses = list(
                pool.map(lambda _: call(running.url, api_key, session_id, 77, "tools/call", params), range(5))
            )
        results = [final_message(r) for r in responses]
        assert all(r.get("result") == results[0]["result"] for r in results), results
        notes = final_message(call(running.url, api_key, session_id, 78, "tools/call", {"name": "read_notes"}))
        assert [n["text"] for n in notes["result"]["structuredContent"]["notes"]] == ["racy"]


def test_cancelled_request_stops_the_tool_and_gets_no_response(aws: AwsStack, api_key: str) -> None:
    """2025 cancellation: after notifications/cancelled for an in-flight tools/call, the tool
    stops and the stream ends without a response for that request (the spec's SHOULD NOT)."""
    import threading

    with endpoint_instance(aws) as running:
        session_id = initialize(running.url, api_key)
        params = {"name": "countdown", "arguments": {"steps": 100, "interval_ms": 100}, "_meta": {"progressToken": "c"}}
        body = {"jsonrpc": "2.0", "id": 31, "method": "tools/call", "params": params}
        request_headers = headers(api_key, **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"})
        seen_progress = threading.Event()
        chunks: list[bytes] = []

        def consume() -> None:
            with httpx.stream("POST", running.url, headers=request_headers, json=body, timeout=30) as response:
                for chunk in response.iter_raw():
                    chunks.append(chunk)
                    if b"notifications/progress" in chunk:
                        seen_progress.set()

        reader = threading.Thread(target=consume)
        reader.start()
        assert seen_progress.wait(10)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 31}}
        assert httpx.post(running.url, headers=request_headers, json=cancel).status_code == 202
        reader.join(timeout=10)
        assert not reader.is_alive(), "the stream did not end after cancellation"
        text = b"".join(chunks).decode()
        assert '"id":31' not in text  # no response for the cancelled request
        assert text.count("notifications/progress") < 100  # the tool stopped early


def test_2026_closing_the_stream_cancels_the_call(aws: AwsStack, api_key: str) -> None:
    """2026-07-28: closing the SSE response stream is the client's cancellation; the server
    stops the work (it never completes). 2025 clients cancel with notifications/cancelled."""
    import time

    from tests.support import probe_tools
    from tests.support.mcp_http import CAPS_META, MODERN
    from tests.support.probe_tools.probe import OUTCOMES

    with endpoint_instance(aws, extra_tools=(probe_tools,)) as running:
        params = {"name": "probe", "arguments": {"tag": "closed"}, "_meta": {**CAPS_META, "progressToken": "p"}}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        request_headers = headers(
            api_key, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "probe"}
        )
        with httpx.stream("POST", running.url, headers=request_headers, json=body, timeout=10) as response:
            for chunk in response.iter_raw():
                if b"notifications/progress" in chunk:
                    break  # the client closes the stream
        deadline = time.monotonic() + 5  # the tool would complete after ~3 s if not cancelled
        while time.monotonic() < deadline and OUTCOMES.get("closed") == "started":
            time.sleep(0.2)
        assert OUTCOMES["closed"] == "cancelled"
