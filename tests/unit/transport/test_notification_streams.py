"""Notification streams on one in-process moto table: what an idle stream costs (AWS calls per
minute, counted through virtual time), the reader's cursor, resumption, and the listen filter."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from mcp_platform.adapters.dynamodb.notification_log import NotificationLog
from mcp_platform.adapters.dynamodb.sessions import ManualClock, SessionStore
from mcp_platform.adapters.dynamodb.subscriptions import LiveSessions, SessionSubscriptions
from mcp_platform.application.notifications import Notifications
from mcp_platform.application.notifications.reader import LogReader
from mcp_platform.config import ConfigError, Settings
from mcp_platform.protocol.jsonrpc import Request
from mcp_platform.transport.listen import NotificationStreams, Served
from mcp_platform.transport.messages import HttpError, HttpRequest
from mcp_platform.transport.stream_pump import StreamPump
from tests.support.tables import create_session_table

MINUTE = 60.0
WATCHED = "test://watched-resource"


class VirtualTimer:
    """Stream time that jumps instead of passing: a 14-minute stream runs in milliseconds."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    async def wait(self, seconds: float, stop: asyncio.Event) -> bool:
        self.t += seconds
        await asyncio.sleep(0)
        return stop.is_set()


class Wire:
    """ASGI send/receive for one request: records the body; the client never goes away."""

    def __init__(self) -> None:
        self.body = b""
        self.status = 0

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        else:
            self.body += message.get("body", b"")

    async def receive(self) -> dict[str, Any]:
        await asyncio.Event().wait()  # no disconnect: only the cap ends the stream
        raise AssertionError("unreachable")

    def messages(self) -> list[tuple[str | None, dict[str, Any]]]:
        found = []
        for block in self.body.decode().split("\n\n"):
            lines = block.splitlines()
            data = [line[6:] for line in lines if line.startswith("data: ")]
            ids = [line[4:] for line in lines if line.startswith("id: ")]
            if data:
                found.append((ids[0] if ids else None, json.loads(data[0])))
        return found


@pytest.fixture
def store(aws_env: None) -> Iterator[SessionStore]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        name = f"sessions-{uuid.uuid4().hex[:8]}"
        create_session_table(client, name)
        yield SessionStore(name, client=client)


async def readable_watched(uri: str, principal: str) -> bool:
    return uri == WATCHED


def streams(store: SessionStore, **pump: Any) -> NotificationStreams:
    """Production defaults (15 s keep-alive, 840 s cap, polls 0.1 s doubling to 5 s) unless given."""
    log = NotificationLog(store.table_name, store.gateway, clock=store.clock)
    notifications = Notifications(log, SessionSubscriptions(store.table_name, store.gateway, clock=store.clock))
    served = Served(frozenset({"tools", "prompts", "resources"}), readable_watched)
    return NotificationStreams(
        notifications,
        LiveSessions(store),
        served,
        {"name": "t", "version": "1"},
        StreamPump(timer=VirtualTimer(), **pump),
    )


def get_request(session_id: str, **extra: str) -> HttpRequest:
    headers = {"accept": "text/event-stream", "mcp-session-id": session_id, **extra}
    return HttpRequest(
        {"method": "GET", "path": "/mcp", "headers": [(k.encode(), v.encode()) for k, v in headers.items()]}
    )


async def checked(session_id: str, principal: str) -> None:
    """The endpoint's transport-session check (one GetItem there), already passed."""


def run_get(store: SessionStore, target: NotificationStreams, session_id: str, **extra: str) -> Wire:
    wire = Wire()
    asyncio.run(target.get_stream(get_request(session_id, **extra), "alice", checked, wire.receive, wire.send, {}))
    return wire


def test_an_idle_2025_get_stream_costs_about_38_reads_per_minute(store: SessionStore) -> None:
    """Measured, not estimated: one idle GET stream with one subscription, over its whole life
    (840 s, the cap), polls 172 times (0.1 s doubling to 5 s, then every 5 s): three Queries each
    (list topic, the URI, the subscription set), one more at open; a GetItem a minute (is the
    session alive: 13, plus the endpoint's check at open); the lease's PutItem and DeleteItem.
    Every read is of an item or page under 4 KB: one read unit each."""
    session = store.create_session("alice", kind="transport")
    target = streams(store)
    target.notifications.subscriptions.subscribe(session.id, WATCHED, owner="alice")
    store.gateway.reset_counts()
    run_get(store, target, session.id)
    assert store.gateway.calls == {"query": 3 * 172 + 1, "get_item": 13, "put_item": 1, "delete_item": 1}
    reads = store.gateway.calls["query"] + store.gateway.calls["get_item"] + 1  # + the check at open
    assert round(reads / (840 / MINUTE), 1) == 37.9  # docs/building/subscriptions.md's figure


def test_an_idle_2026_listen_stream_costs_one_query_per_poll_and_topic(store: SessionStore) -> None:
    """subscriptions/listen for tool list changes only: 172 polls of one partition in 840 s, no
    other call (no session to check, no lease): 12.3 reads per minute."""
    target = streams(store)
    message = Request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, 1)
    wire = Wire()
    store.gateway.reset_counts()
    asyncio.run(target.listen(get_request("-"), message, "alice", wire.receive, wire.send, {}))
    assert store.gateway.calls == {"query": 172}
    ack, closing = wire.messages()[0][1], wire.messages()[-1][1]
    assert ack["params"]["notifications"] == {"toolsListChanged": True}
    assert closing == {  # the cap ends it gracefully: the request's result, tagged
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": 1,
                   "io.modelcontextprotocol/serverInfo": {"name": "t", "version": "1"}}},
    }  # fmt: skip


def test_keep_alives_fill_the_silence_of_an_idle_stream(store: SessionStore) -> None:
    """S7: an idle 840 s stream gets a keep-alive comment every 15 s (55 of them), then ends."""
    session = store.create_session("alice", kind="transport")
    wire = run_get(store, streams(store), session.id)
    assert wire.status == 200 and wire.body.count(b": keep-alive\n\n") == 55
    assert wire.messages() == []


def test_an_entry_committed_behind_the_cursor_is_delivered_once(aws_env: None) -> None:
    """The writer stamps an entry before its PutItem commits, so it can land behind an sk the
    reader has passed: the overlap reads it on the next poll, and only once."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_session_table(client, "t")
        clock = ManualClock(1_800_000_000.0)
        log = NotificationLog("t", SessionStore("t", client=client).gateway, clock=clock)
        reader = LogReader(log, log.cursor(clock.now()))
        clock.advance(1.0)
        reader.begin()
        assert reader.finish(reader.read("lists")) == []  # the poll at +1 s: nothing yet
        clock.set(1_800_000_000.5)
        late = log.publish_list_changed("tools")  # stamped +0.5 s, committed after that poll
        clock.set(1_800_000_001.5)
        for expected in ([late], []):
            reader.begin()
            assert reader.finish(reader.read("lists")) == expected


def test_last_event_id_resumes_after_that_entry(store: SessionStore) -> None:
    """2025: a client reconnecting with the id of the last event it got receives only what came
    after it; an id that is not ours starts the stream at now."""
    session = store.create_session("alice", kind="transport")
    target = streams(store, max_stream_seconds=1.0)
    first = target.notifications.log.publish_list_changed("tools")
    second = target.notifications.log.publish_list_changed("prompts")
    resumed = run_get(store, target, session.id, **{"last-event-id": first.sk})
    assert [(event_id, message["method"]) for event_id, message in resumed.messages()] == [
        (second.sk, "notifications/prompts/list_changed")
    ]
    assert run_get(store, target, session.id, **{"last-event-id": "event-7"}).messages() == []


@pytest.mark.parametrize(
    "notifications", [None, "tools", {"toolsListChanged": "yes"}, {"resourceSubscriptions": "test://a"}]
)
def test_a_malformed_listen_filter_is_invalid_params(store: SessionStore, notifications: Any) -> None:
    wire = Wire()
    message = Request("subscriptions/listen", {"notifications": notifications}, 9)
    asyncio.run(streams(store).listen(get_request("-"), message, "alice", wire.receive, wire.send, {}))
    assert wire.status == 400
    assert json.loads(wire.body)["error"]["code"] == -32602


def test_a_get_stream_needs_accept_event_stream_and_a_session(store: SessionStore) -> None:
    target = streams(store)
    wire = Wire()
    no_sse = HttpRequest({"method": "GET", "path": "/mcp", "headers": [(b"accept", b"application/json")]})
    with pytest.raises(HttpError) as refused:
        asyncio.run(target.get_stream(no_sse, "alice", checked, wire.receive, wire.send, {}))
    assert refused.value.status == 406
    no_session = HttpRequest({"method": "GET", "path": "/mcp", "headers": [(b"accept", b"text/event-stream")]})
    with pytest.raises(HttpError) as missing:
        asyncio.run(target.get_stream(no_session, "alice", checked, wire.receive, wire.send, {}))
    assert missing.value.status == 400 and wire.body == b""


@pytest.mark.parametrize("value", ["maybe", "1", "yes"])
def test_the_subscriptions_variable_is_true_or_false(value: str) -> None:
    assert Settings.from_mapping({"SESSION_TABLE_NAME": "t"}).subscriptions is False
    assert Settings.from_mapping({"SESSION_TABLE_NAME": "t", "MCP_SUBSCRIPTIONS": "true"}).subscriptions is True
    with pytest.raises(ConfigError, match="MCP_SUBSCRIPTIONS"):
        Settings.from_mapping({"SESSION_TABLE_NAME": "t", "MCP_SUBSCRIPTIONS": value})
