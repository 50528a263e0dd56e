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


def test_a_tool_declared_reads_context_false_never_loads_the_context(instance: Instance, api_key: str) -> None:
    """Given a session holding 20 notes (each a context item), When increment_counter (declared
    reads_context=False: counters are attributes) is called on it, Then its load is one
    BatchGetItem and no Query of the context items, whatever the session holds; read_notes,
    which reads the context, still makes the Query and sees every note."""
    handle = tool(instance, api_key, 1, "open_session", {})["result"]["structuredContent"]["session"]
    for i in range(20):
        assert "result" in tool(instance, api_key, 10 + i, "append_note", {"session": handle, "text": f"n{i}"})
    gateway = instance.endpoint.store.gateway
    before = gateway.calls
    counted = tool(instance, api_key, 40, "increment_counter", {"session": handle})
    assert counted["result"]["structuredContent"]["value"] == 1
    assert (gateway.calls - before) == {"batch_get_item": 1, "transact_write_items": 1}
    before = gateway.calls
    notes = tool(instance, api_key, 41, "read_notes", {"session": handle, "limit": 100})
    assert notes["result"]["structuredContent"]["total"] == 20
    assert (gateway.calls - before)["query"] == 1
