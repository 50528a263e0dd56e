"""Capabilities and 2025 resources/subscribe through the protocol core, option on and off."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from functools import partial
from typing import Any

import boto3
import pytest
from moto import mock_aws

from mcp_platform.adapters.dynamodb.notification_log import NotificationLog
from mcp_platform.adapters.dynamodb.sessions import SessionStore
from mcp_platform.adapters.dynamodb.subscriptions import SessionSubscriptions
from mcp_platform.application.notifications import Notifications
from mcp_platform.application.server import McpServer
from mcp_platform.application.subscriptions import audience
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.jsonrpc import (
    INVALID_PARAMS,
    LIMIT_EXCEEDED,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    JsonRpcError,
    Request,
)
from mcp_platform.protocol.prompts import prompt, user
from mcp_platform.protocol.request_context import RequestContext, TransportSession
from mcp_platform.protocol.resources import ResourceNotFound, resource, resource_template
from tests.support.services import make_services
from tests.support.tables import create_session_table

SESSION = "s" * 32


@resource(uri="test://watched", description="Watched.")
async def watched(ctx: ToolContext) -> str:
    return "w"


@prompt(description="Greets.")
async def hello(ctx: ToolContext) -> list[dict[str, Any]]:
    return [user("hello")]


@pytest.fixture
def notifications(aws_env: None) -> Iterator[Notifications]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        name = f"sessions-{uuid.uuid4().hex[:8]}"
        create_session_table(client, name)
        gateway = SessionStore(name, client=client).gateway
        subscriptions = SessionSubscriptions(name, gateway, max_per_session=2)
        yield Notifications(NotificationLog(name, gateway), subscriptions)


def server(notifications: Notifications | None) -> McpServer:
    services = make_services(notifications=notifications)
    return McpServer(Catalog.of([watched, hello]), ToolCallRunner(services), services=services)


def legacy_call(srv: McpServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    call = RequestContext("alice", "2025-11-25", modern=False, transport=TransportSession(SESSION))
    return asyncio.run(srv.handle(Request(method, params, 1), call))


def test_capabilities_advertise_subscribe_and_list_changes_only_when_on(notifications: Notifications) -> None:
    for modern in (False, True):
        off = server(None).capabilities(modern)
        assert off["resources"] == {"listChanged": False} and not off["tools"]["listChanged"]
        assert not off["prompts"]["listChanged"]
        on = server(notifications).capabilities(modern)
        assert on["resources"] == {"subscribe": True, "listChanged": True}
        assert on["tools"] == {"listChanged": True} and on["prompts"] == {"listChanged": True}


def test_subscribe_exists_in_the_2025_era_only_and_only_when_on(notifications: Notifications) -> None:
    modern = RequestContext(principal="alice", protocol_version="2026-07-28", modern=True)
    for srv, call in ((server(None), None), (server(notifications), modern)):
        with pytest.raises(JsonRpcError) as missing:
            if call is None:
                legacy_call(srv, "resources/subscribe", {"uri": "test://watched"})
            else:
                asyncio.run(srv.handle(Request("resources/subscribe", {"uri": "test://watched"}, 1), call))
        assert missing.value.code == METHOD_NOT_FOUND


def test_subscribe_stores_known_uris_up_to_the_limit(notifications: Notifications) -> None:
    srv = server(notifications)
    assert legacy_call(srv, "resources/subscribe", {"uri": "test://watched"}) == {}
    assert legacy_call(srv, "resources/subscribe", {"uri": "test://watched"}) == {}  # again: renewed
    assert set(notifications.subscriptions.snapshot(SESSION, owner="alice").since) == {"test://watched"}
    assert notifications.subscriptions.snapshot(SESSION, owner="bob").since == {}  # the owner's only
    for params, code in (
        ({"uri": "test://unknown"}, RESOURCE_NOT_FOUND),
        ({"uri": ""}, INVALID_PARAMS),
        ({}, INVALID_PARAMS),
    ):
        with pytest.raises(JsonRpcError) as refused:
            legacy_call(srv, "resources/subscribe", params)
        assert refused.value.code == code
    assert legacy_call(srv, "resources/unsubscribe", {"uri": "test://watched"}) == {}
    assert notifications.subscriptions.snapshot(SESSION, owner="alice").since == {}


@resource_template(uri_template="test://any/{name}", description="Reads for any name.")
async def any_name(ctx: ToolContext, name: str) -> str:
    return name


def test_a_uri_that_cannot_be_stored_is_invalid_params(notifications: Notifications) -> None:
    """Issue 26: a subscription keeps its URI; one with a lone surrogate (a template matches it)
    failed the write (UnicodeEncodeError: -32603)."""
    services = make_services(notifications=notifications)
    srv = McpServer(Catalog.of([any_name]), ToolCallRunner(services), services=services)
    with pytest.raises(JsonRpcError) as refused:
        legacy_call(srv, "resources/subscribe", {"uri": "test://any/x\ud800"})
    assert refused.value.code == INVALID_PARAMS and "not well-formed Unicode" in refused.value.message


def test_a_session_watches_a_bounded_number_of_resources(notifications: Notifications) -> None:
    subscriptions = notifications.subscriptions  # max_per_session=2 here (32 by default)
    subscriptions.subscribe(SESSION, "test://a", owner="alice")
    subscriptions.subscribe(SESSION, "test://b", owner="alice")
    srv = server(notifications)
    with pytest.raises(JsonRpcError) as full:
        legacy_call(srv, "resources/subscribe", {"uri": "test://watched"})
    assert full.value.code == LIMIT_EXCEEDED and full.value.data == {"limit": "subscriptions", "max": 2}


# -- issue 26 item 6: authorized as a read; the log keeps private updates per principal ------------
@resource_template(uri_template="test://private/{owner}", description="Readable by its owner only.")
async def owned(ctx: ToolContext, owner: str) -> str:
    if owner != ctx.principal:
        raise ResourceNotFound(owner)
    return f"{owner}'s"


@resource(uri="test://public", description="The same for everyone.", cache=(0, "public"))
async def shared(ctx: ToolContext) -> str:
    return "shared"


def test_a_uri_the_caller_cannot_read_is_refused_as_its_read_is_and_nothing_is_kept(
    notifications: Notifications,
) -> None:
    """Given a template that reads only for its owner, When bob subscribes to alice's URI, Then the
    answer is his read's (-32002, the URI in data), and his session watches nothing."""
    services = make_services(notifications=notifications)
    srv = McpServer(Catalog.of([owned]), ToolCallRunner(services), services=services)
    bobs = RequestContext("bob", "2025-11-25", modern=False, transport=TransportSession(SESSION))
    errors = []
    for method in ("resources/read", "resources/subscribe"):
        with pytest.raises(JsonRpcError) as refused:
            asyncio.run(srv.handle(Request(method, {"uri": "test://private/alice"}, 1), bobs))
        errors.append(refused.value.to_error())
    assert errors[0] == errors[1] and errors[0]["code"] == RESOURCE_NOT_FOUND
    assert notifications.subscriptions.snapshot(SESSION, owner="bob").since == {}
    assert legacy_call(srv, "resources/subscribe", {"uri": "test://private/alice"}) == {}  # alice may


def test_a_private_resources_updates_are_read_by_its_principal_alone_a_public_ones_by_all(
    notifications: Notifications,
) -> None:
    """Given the audience of the endpoint (by declared cache scope), When alice announces updates
    of a private and a public resource, Then bob's topics hold only the public one, alice's both."""
    keyed = Notifications(
        notifications.log, notifications.subscriptions, partial(audience, Catalog.of([owned, shared]))
    )
    for uri in ("test://private/alice", "test://public"):
        asyncio.run(keyed.resource_updated(uri, principal="alice"))
    start = keyed.log.cursor(0)

    def heard(principal: str) -> list[str]:
        uris = ("test://private/alice", "test://public")
        return [n.uri for uri in uris for n in keyed.log.read(keyed.resource_topic(uri, principal), start)]

    assert heard("alice") == ["test://private/alice", "test://public"]
    assert heard("bob") == ["test://public"]
