"""Bounded session state over HTTP: a full session answers a specific, documented error."""

from __future__ import annotations

import pytest

from mcp_platform.protocol.jsonrpc import LIMIT_EXCEEDED
from tests.support.endpoint import Instance
from tests.support.mcp_http import CAPS_META, final_message, modern_call

pytestmark = pytest.mark.integration


def tool(instance: Instance, key: str, request_id: int, name: str, arguments: dict) -> dict:
    params = {"name": name, "arguments": arguments, "_meta": CAPS_META}
    return final_message(modern_call(instance.url, key, request_id, "tools/call", params))


def test_appends_past_the_context_budget_get_limit_exceeded_and_store_nothing(
    instance: Instance, api_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given a session whose context budget (8 KiB here, 160 KiB by default) is nearly used,
    When append_note would pass it, Then the answer is -31005 naming the limit (not -32603),
    nothing is stored, and the session still serves reads."""
    monkeypatch.setattr(instance.endpoint.store, "context_budget_bytes", 8192)
    handle = tool(instance, api_key, 1, "open_session", {})["result"]["structuredContent"]["session"]
    note = "x" * 3000
    answers = [tool(instance, api_key, 10 + i, "append_note", {"session": handle, "text": note}) for i in range(3)]
    assert ["result" in a for a in answers] == [True, True, False], answers
    refused = answers[2]["error"]
    assert refused["code"] == LIMIT_EXCEEDED and refused["data"]["limit"] == "session_context_bytes"
    info = tool(instance, api_key, 20, "session_info", {"session": handle})["result"]["structuredContent"]
    assert info["notes"] == 2
