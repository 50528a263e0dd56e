"""The official Python SDK client drives the endpoint in both protocol eras.

Every message the server sends during these tests is validated against the official
``mcp-types`` models when the module's server stops (see conftest ``instance``).
"""

from __future__ import annotations

import anyio
import pytest

from tests.support.catalog import EXPECTED_TOOLS
from tests.support.endpoint import Instance, sdk_client

pytestmark = pytest.mark.integration


def run(coro_fn):
    return anyio.run(coro_fn)


def test_2025_era_initialize_list_and_session_tools(instance: Instance, api_key: str) -> None:
    """Given a 2025-era client, when it initializes and calls session tools without a handle,
    then they act on the transport session's own application session (SPEC "MCP protocol")."""

    async def body() -> None:
        async with sdk_client(instance.url, api_key, "legacy") as client:
            listed = await client.list_tools()
            assert [tool.name for tool in listed.tools] == EXPECTED_TOOLS
            before = await client.call_tool("session_info", {})
            await client.call_tool("append_note", {"text": "first"})
            await client.call_tool("append_note", {"text": "second"})
            notes = await client.call_tool("read_notes", {})
            after = await client.call_tool("session_info", {})
            assert [n["text"] for n in notes.structured_content["notes"]] == ["first", "second"]
            assert after.structured_content["version"] > before.structured_content["version"]
            assert after.structured_content["kind"] == "transport"

    run(body)


def test_2026_era_stateless_with_explicit_session_handle(instance: Instance, api_key: str) -> None:
    """Given a 2026-07-28 client (no initialize, no Mcp-Session-Id), when it opens an
    application session and passes the handle as an ordinary argument, then the session state
    persists across stateless requests (SEP-2567 handles)."""

    async def body() -> None:
        async with sdk_client(instance.url, api_key, "2026-07-28") as client:
            listed = await client.list_tools()
            assert [tool.name for tool in listed.tools] == EXPECTED_TOOLS
            opened = await client.call_tool("open_session", {"title": "modern"})
            handle = opened.structured_content["session"]
            await client.call_tool("append_note", {"text": "stateless note", "session": handle})
            notes = await client.call_tool("read_notes", {"session": handle})
            assert [n["text"] for n in notes.structured_content["notes"]] == ["stateless note"]

    run(body)


def test_2026_session_tool_without_handle_is_a_clear_error(instance: Instance, api_key: str) -> None:
    """Given a 2026 client, when it calls a session tool without a handle, then it gets a
    JSON-RPC invalid-params error naming the missing handle (not a crash)."""

    async def body() -> None:
        async with sdk_client(instance.url, api_key, "2026-07-28") as client:
            with pytest.raises(Exception, match="open_session"):
                await client.call_tool("session_info", {})

    run(body)


def test_progress_notifications_stream_before_the_result(instance: Instance, api_key: str) -> None:
    """Given a tool that reports progress, when the client passes a progress callback, then
    progress notifications arrive over SSE before the result (S2, S4)."""
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async def body() -> None:
        async with sdk_client(instance.url, api_key, "legacy") as client:
            result = await client.call_tool("countdown", {"steps": 3, "interval_ms": 10}, progress_callback=on_progress)
            assert result.content[0].text == "counted 3 steps"

    run(body)
    assert seen == [0, 1, 2, 3]


def test_invalid_arguments_are_a_tool_error_the_model_can_read(instance: Instance, api_key: str) -> None:
    """Given arguments of the wrong type, then the result is isError with the offending path."""

    async def body() -> None:
        async with sdk_client(instance.url, api_key, "legacy") as client:
            result = await client.call_tool("echo", {"text": 42})
            assert result.is_error
            assert "arguments.text" in result.content[0].text

    run(body)


def test_2026_request_ids_reused_by_a_new_connection_are_not_replays(instance: Instance, api_key: str) -> None:
    """Given two 2026 client connections of one principal on one session (request ids restart
    at every connection), when the second calls another tool under an id the first already
    used, then its own tool runs: only an explicit idempotency key deduplicates in 2026."""

    async def body() -> None:
        async with sdk_client(instance.url, api_key, "2026-07-28") as first:
            handle = (await first.call_tool("open_session", {})).structured_content["session"]
            await first.call_tool("append_note", {"text": "from the first connection", "session": handle})
        async with sdk_client(instance.url, api_key, "2026-07-28") as second:
            await second.call_tool("echo", {"text": "shift the id counter"})
            info = await second.call_tool("session_info", {"session": handle})
            assert info.structured_content["session"] == handle  # session_info ran, no replay
            assert info.structured_content["tool_calls"] == 1

    run(body)
