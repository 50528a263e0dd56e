"""The official Python SDK client receives subscriptions in both eras, from the other instance.

The SDK's client is connected to instance B; the changes are announced by tool calls on A (2026
requests, no session needed). As in the raw tests, a later tool list change is the marker: the
verdict is what arrived before it, never how fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from examples import conformance
from examples.conformance.subscriptions import WATCHED
from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from tests.support.endpoint import AwsStack, Instance, endpoint_instance, fresh_stack, sdk_client
from tests.support.mcp_http import CAPS_META, modern_call
from tests.support.sse import HANG_GUARD_S

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:resources/subscribe is removed")]


aws = pytest.fixture(fresh_stack, name="aws")  # a fresh emulator per test


@pytest.fixture()
def key(aws: AwsStack) -> str:
    return ApiKeyStore(aws.table, aws.client("dynamodb")).mint("alice")


@pytest.fixture()
def pair(aws: AwsStack) -> Iterator[tuple[Instance, Instance]]:
    with (
        endpoint_instance(aws, extra_tools=(conformance,), MCP_SUBSCRIPTIONS="true") as a,
        endpoint_instance(aws, extra_tools=(conformance,), MCP_SUBSCRIPTIONS="true") as b,
    ):
        yield a, b


def announce(instance: Instance, key: str, *tools: str) -> None:
    for request_id, tool in enumerate(tools, start=1):
        params = {"name": tool, "arguments": {}, "_meta": CAPS_META}
        assert modern_call(instance.url, key, request_id, "tools/call", params).status_code == 200


def test_2026_client_listen_gets_what_the_other_instance_announces(pair: tuple[Instance, Instance], key: str) -> None:
    a, b = pair
    events: list[str] = []

    async def body() -> None:
        async with (
            sdk_client(b.url, key, "2026-07-28") as client,
            client.listen(tools_list_changed=True, resource_subscriptions=[WATCHED]) as subscription,
        ):
            assert subscription.honored.resource_subscriptions == [WATCHED]
            await anyio.to_thread.run_sync(announce, a, key, "test_trigger_resource_update", "test_trigger_tool_change")
            with anyio.fail_after(HANG_GUARD_S):  # a hang guard: the verdict is the order below
                async for event in subscription:
                    events.append(f"{type(event).__name__}:{getattr(event, 'uri', '')}")
                    if type(event).__name__ == "ToolsListChanged":
                        return

    anyio.run(body)
    assert events == [f"ResourceUpdated:{WATCHED}", "ToolsListChanged:"]


def test_2025_client_subscribe_gets_updates_on_its_get_stream(pair: tuple[Instance, Instance], key: str) -> None:
    """The SDK opens its GET stream on its own, some time after initialize: prompt list changes
    are announced until one arrives (the stream is then open and delivering), and only then the
    update and the marker."""
    a, b = pair
    received: list[Any] = []
    streaming, marker = anyio.Event(), anyio.Event()

    async def handler(message: Any) -> None:
        method = getattr(message, "method", "")
        if method == "notifications/prompts/list_changed":
            streaming.set()
            return
        received.append(message)
        if method == "notifications/tools/list_changed":
            marker.set()

    async def body() -> None:
        import httpx2

        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
        transport = streamable_http_client(b.url, http_client=http)
        async with Client(transport, mode="legacy", message_handler=handler) as client:  # type: ignore[arg-type]
            capabilities = client.server_capabilities
            assert capabilities.resources is not None and capabilities.resources.subscribe
            await client.subscribe_resource(WATCHED)
            with anyio.fail_after(HANG_GUARD_S):  # a hang guard: the verdict is the order below
                while not streaming.is_set():
                    await anyio.to_thread.run_sync(announce, a, key, "test_trigger_prompt_change")
                    with anyio.move_on_after(1):  # paces the retries only
                        await streaming.wait()
                await anyio.to_thread.run_sync(
                    announce, a, key, "test_trigger_resource_update", "test_trigger_tool_change"
                )
                await marker.wait()

    anyio.run(body)
    methods = [getattr(message, "method", "") for message in received]
    assert methods == ["notifications/resources/updated", "notifications/tools/list_changed"]
    assert received[0].params.uri == WATCHED
