"""Protocol details a real client depends on: ids echoed on 2026 refusals, opt-in logging,
session checks on every 2025 message, idempotency keys that mean one request."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.support.endpoint import Instance
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


def test_another_principal_cannot_cancel_my_call(instance: Instance, api_key: str, mint_key) -> None:
    session_id = initialize(instance.url, api_key)
    outcome: dict[str, httpx.Response] = {}
    params = {"name": "countdown", "arguments": {"steps": 10, "interval_ms": 100}}
    worker = threading.Thread(
        target=lambda: outcome.update(r=call(instance.url, api_key, session_id, 99, "tools/call", params))
    )
    worker.start()
    time.sleep(0.4)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}
    assert notify(instance.url, mint_key("eve"), session_id, cancel).status_code == 404
    worker.join(30)
    assert final_message(outcome["r"])["result"]["content"][0]["text"] == "counted 10 steps"


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
