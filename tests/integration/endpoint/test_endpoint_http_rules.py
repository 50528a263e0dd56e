"""HTTP rules of Streamable HTTP, default-deny auth and bad input: always 4xx or a JSON-RPC
error, never a 500, and the server stays up."""

from __future__ import annotations

import httpx
import pytest

from tests.support.endpoint import Instance
from tests.support.mcp_http import CAPS_META, MODERN, call, final_message, headers, initialize, modern_call

pytestmark = pytest.mark.integration

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def test_healthz_is_cheap_and_open(instance: Instance) -> None:
    """Given no credentials, /healthz (the Web Adapter readiness path, S1) answers 200."""
    response = httpx.get(instance.url.replace("/mcp", "/healthz"))
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.parametrize(
    ("auth", "expected_error"),
    [(None, None), ("Bearer not-a-key", "invalid_token"), ("Basic abc", "invalid_request")],
)
def test_default_deny_answers_401_with_a_challenge(instance: Instance, auth: str | None, expected_error) -> None:
    """Given a missing, unknown or malformed credential, then 401 with WWW-Authenticate."""
    request_headers = headers(None) if auth is None else {**headers(None), "Authorization": auth}
    response = httpx.post(instance.url, headers=request_headers, json=PING)
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="mcp"')
    if expected_error:
        assert f'error="{expected_error}"' in challenge
    assert response.json()["error"]["code"] < 0


def test_another_principal_gets_404_for_my_session(instance: Instance, api_key: str, mint_key) -> None:
    """Given alice's transport session, when bob uses its id, then 404 (sessions are bound to
    the principal that created them; no existence oracle)."""
    session_id = initialize(instance.url, api_key)
    bob = mint_key("bob")
    assert call(instance.url, bob, session_id, 2, "ping").status_code == 404
    assert call(instance.url, api_key, session_id, 3, "ping").status_code == 200


def test_session_rules_missing_400_unknown_404_delete_ends(instance: Instance, api_key: str) -> None:
    """Given the 2025 session rules: no Mcp-Session-Id → 400, unknown → 404, DELETE ends it."""
    no_session = httpx.post(instance.url, headers=headers(api_key), json=PING)
    assert no_session.status_code == 400
    assert call(instance.url, api_key, "no-such-session", 2, "ping").status_code == 404
    session_id = initialize(instance.url, api_key)
    assert call(instance.url, api_key, session_id, 3, "ping").json() == {"jsonrpc": "2.0", "id": 3, "result": {}}
    deleted = httpx.delete(instance.url, headers=headers(api_key, **{"Mcp-Session-Id": session_id}))
    assert deleted.status_code == 200
    assert call(instance.url, api_key, session_id, 4, "ping").status_code == 404


def test_notifications_get_202_and_unsupported_methods_405(instance: Instance, api_key: str) -> None:
    session_id = initialize(instance.url, api_key)
    note = httpx.post(
        instance.url,
        headers=headers(api_key, **{"Mcp-Session-Id": session_id}),
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
    )
    assert note.status_code == 202 and note.content == b""
    get = httpx.get(instance.url, headers=headers(api_key, **{"Mcp-Session-Id": session_id}))
    assert get.status_code == 405 and "POST" in get.headers["allow"]
    put = httpx.put(instance.url, headers=headers(api_key), json=PING)
    assert put.status_code == 405


@pytest.mark.parametrize(
    ("body", "extra_headers", "status"),
    [
        (b"{not json", {}, 400),
        (b"\xff\xfe\x00garbage", {}, 400),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', {}, 400),
        (b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}', {}, 400),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 7}', {}, 400),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', {}, 400),
        (b'"just a string"', {}, 400),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}', {"Content-Type": "text/plain"}, 415),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}', {"Accept": "text/html"}, 406),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}', {"MCP-Protocol-Version": "1999-01-01"}, 400),
        (b"x" * 70_000, {}, 413),
    ],
    ids=[
        "malformed",
        "invalid-utf8",
        "wrong-jsonrpc",
        "object-id",
        "method-type",
        "batch",
        "scalar",
        "content-type",
        "accept",
        "unknown-version",
        "oversized",
    ],
)
def test_bad_input_is_a_4xx_never_a_500(instance: Instance, api_key: str, body: bytes, extra_headers, status) -> None:
    """Given malformed or refused input, then a 4xx with a JSON-RPC error body, and the server
    still answers the next request."""
    response = httpx.post(instance.url, headers={**headers(api_key), **extra_headers}, content=body)
    assert response.status_code == status, response.text
    assert "error" in response.json()
    assert httpx.get(instance.url.replace("/mcp", "/healthz")).status_code == 200


def test_origin_not_on_the_allow_list_is_403(instance: Instance, api_key: str) -> None:
    """S8: CORS/Origin by allow-list, not '*'."""
    response = httpx.post(instance.url, headers={**headers(api_key), "Origin": "https://evil.example"}, json=PING)
    assert response.status_code == 403


def test_unknown_method_and_unknown_tool(instance: Instance, api_key: str) -> None:
    """Unknown method → -32601; unknown tool → -32602 (a protocol error, not an isError result)."""
    session_id = initialize(instance.url, api_key)
    assert call(instance.url, api_key, session_id, 2, "no/such").json()["error"]["code"] == -32601
    unknown = call(instance.url, api_key, session_id, 3, "tools/call", {"name": "nope", "arguments": {}})
    assert unknown.json()["error"]["code"] == -32602


def test_modern_era_rules(instance: Instance, api_key: str) -> None:
    """2026-07-28: server/discover works; missing envelope → 400; header mismatch → 400;
    unknown method → 404; initialize and ping do not exist in this era."""
    discover = modern_call(instance.url, api_key, 1, "server/discover", {"_meta": CAPS_META})
    assert discover.status_code == 200
    assert discover.json()["result"]["supportedVersions"] == [MODERN]
    assert discover.json()["result"]["resultType"] == "complete"
    no_meta = modern_call(instance.url, api_key, 2, "tools/list", {})
    assert no_meta.status_code == 400 and no_meta.json()["error"]["code"] == -32602
    mismatch = httpx.post(
        instance.url,
        headers=headers(api_key, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"}),
        json={"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": CAPS_META}},
    )
    assert mismatch.status_code == 400 and mismatch.json()["error"]["code"] == -32020
    assert modern_call(instance.url, api_key, 4, "ping", {"_meta": CAPS_META}).status_code == 404
    listed = modern_call(instance.url, api_key, 5, "tools/list", {"_meta": CAPS_META}).json()["result"]
    assert listed["ttlMs"] > 0 and listed["cacheScope"] in ("public", "private")
    delete = httpx.delete(instance.url, headers=headers(api_key, **{"MCP-Protocol-Version": MODERN}))
    assert delete.status_code == 405


def test_idempotent_tools_call_replays_the_original_result(instance: Instance, api_key: str) -> None:
    """Given the same JSON-RPC request id retried on the same transport session, then the
    original result comes back and the tool did not run again (one note, not two)."""
    session_id = initialize(instance.url, api_key)
    params = {"name": "append_note", "arguments": {"text": "once"}}
    first = final_message(call(instance.url, api_key, session_id, 42, "tools/call", params))
    retry = final_message(call(instance.url, api_key, session_id, 42, "tools/call", params))
    assert retry["result"] == first["result"]
    notes = final_message(call(instance.url, api_key, session_id, 43, "tools/call", {"name": "read_notes"}))
    assert [n["text"] for n in notes["result"]["structuredContent"]["notes"]] == ["once"]


def test_modern_idempotency_key_makes_a_reissued_request_safe(instance: Instance, api_key: str) -> None:
    """Given a 2026 client that re-issues a broken request with a new id but the same explicit
    idempotency key in _meta, then the tool runs once."""
    opened = final_message(
        modern_call(
            instance.url, api_key, 1, "tools/call", {"name": "open_session", "arguments": {}, "_meta": CAPS_META}
        )
    )
    handle = opened["result"]["structuredContent"]["session"]
    meta = {**CAPS_META, "dev.mcp-platform/idempotencyKey": "note-1"}
    params = {"name": "append_note", "arguments": {"text": "exactly once", "session": handle}, "_meta": meta}
    first = final_message(modern_call(instance.url, api_key, 2, "tools/call", params))
    second = final_message(modern_call(instance.url, api_key, 3, "tools/call", params))
    assert first["result"] == second["result"]
    read = {"name": "read_notes", "arguments": {"session": handle}, "_meta": CAPS_META}
    notes = final_message(modern_call(instance.url, api_key, 4, "tools/call", read))
    assert len(notes["result"]["structuredContent"]["notes"]) == 1


def test_allowed_origin_gets_cors_headers_and_preflight(aws, api_key: str) -> None:
    """S8: an Origin on the allow-list is echoed (never '*'), preflight names the MCP headers."""
    from tests.support.endpoint import endpoint_instance

    origin = "https://app.example.com"
    with endpoint_instance(aws, MCP_ALLOWED_ORIGINS=origin) as running:
        preflight = httpx.options(running.url, headers={"Origin": origin, "Access-Control-Request-Method": "POST"})
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == origin
        assert "mcp-session-id" in preflight.headers["access-control-allow-headers"]
        posted = httpx.post(running.url, headers={**headers(api_key), "Origin": origin}, json=PING)
        assert posted.status_code == 400  # no session: the rule still applies, with CORS headers
        assert posted.headers["access-control-allow-origin"] == origin
        refused = httpx.post(running.url, headers={**headers(api_key), "Origin": "https://other.example"}, json=PING)
        assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers


def test_idempotency_key_reused_for_another_tool_is_refused(instance: Instance, api_key: str) -> None:
    """A key names one call: reusing it for a different tool is -32602, never a wrong replay."""
    opened = final_message(
        modern_call(
            instance.url, api_key, 1, "tools/call", {"name": "open_session", "arguments": {}, "_meta": CAPS_META}
        )
    )
    handle = opened["result"]["structuredContent"]["session"]
    meta = {**CAPS_META, "dev.mcp-platform/idempotencyKey": "shared-key"}
    note = {"name": "append_note", "arguments": {"text": "x", "session": handle}, "_meta": meta}
    assert "result" in final_message(modern_call(instance.url, api_key, 2, "tools/call", note))
    info = {"name": "session_info", "arguments": {"session": handle}, "_meta": meta}
    refused = modern_call(instance.url, api_key, 3, "tools/call", info)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == -32602


def test_unreachable_dynamodb_is_503_with_retry_after_never_500() -> None:
    """Given DynamoDB unreachable (a closed loopback port), when a request needs it (the API
    key lookup), then 503 + Retry-After with a JSON-RPC error, and the server stays up."""
    from mcp_platform.bootstrap.endpoint import build_app
    from mcp_platform.config import Settings
    from tests.support import platform_tools
    from tests.support.aws import client, fake_credentials, free_port
    from tests.support.servers import serve

    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with fake_credentials():
        settings = Settings.from_mapping({"SESSION_TABLE_NAME": "t"})
        app = build_app(settings, platform_tools, dynamodb=client("dynamodb", dead))
        with serve(app) as base:
            response = httpx.post(f"{base}/mcp", headers=headers("some-key"), json=PING, timeout=30)
            assert response.status_code == 503 and response.headers["retry-after"] == "1"
            assert response.json()["error"]["code"] == -32603
            assert httpx.get(f"{base}/healthz").status_code == 200
