"""Subscriptions over two instances on one emulator (stack option ``subscriptions``).

On Lambda the request that changes a resource and the stream that announces it run in different
execution environments; here they are two endpoint instances sharing one moto table. Each test
reads its stream until a marker (a list change it published *after* what it checks) and judges
what arrived before it: the reader delivers everything published before an entry no later than
that entry (``mcp_platform.application.notifications.reader``), so no verdict depends on timing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import mcp_platform.adapters.dynamodb.notification_log as notification_log_module
from examples import conformance
from examples.conformance.subscriptions import WATCHED
from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.adapters.dynamodb.subscriptions import SessionSubscriptions
from mcp_platform.protocol.jsonrpc import FORBIDDEN
from tests.support import notify_tools
from tests.support.endpoint import AwsStack, Instance, alice_and_bob, endpoint_instance, fresh_stack
from tests.support.mcp_http import CAPS_META, MODERN, call, final_message, headers, initialize, modern_call
from tests.support.naive_log import InMemoryLog
from tests.support.notify_tools.announce import notes_uri
from tests.support.sse import Event, EventStream

pytestmark = pytest.mark.integration

LEGACY = "2025-11-25"
UPDATED = "notifications/resources/updated"
TOOLS_CHANGED = "notifications/tools/list_changed"
PROMPTS_CHANGED = "notifications/prompts/list_changed"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


# A fresh emulator per test: nothing one test published is in another's log.
aws = pytest.fixture(fresh_stack, name="aws")


keys = pytest.fixture(alice_and_bob, name="keys")


@pytest.fixture()
def pair(aws: AwsStack) -> Iterator[tuple[Instance, Instance]]:
    tools = (conformance, notify_tools)
    with (
        endpoint_instance(aws, extra_tools=tools, MCP_SUBSCRIPTIONS="true") as a,
        endpoint_instance(aws, extra_tools=tools, MCP_SUBSCRIPTIONS="true") as b,
    ):
        yield a, b
    # Every message both sent, checked against the official models.
    assert sum(instance.recorder.validate_all() for instance in (a, b)) > 0


def legacy(key: str, session_id: str, **extra: str) -> dict[str, str]:
    return headers(key, **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": LEGACY, **extra})


def get_stream(instance: Instance, key: str, session_id: str, **extra: str) -> EventStream:
    return EventStream("GET", instance.url, {**legacy(key, session_id, **extra), "Accept": "text/event-stream"})


def trigger(instance: Instance, key: str, session_id: str, request_id: int, tool: str) -> None:
    response = call(instance.url, key, session_id, request_id, "tools/call", {"name": tool, "arguments": {}})
    assert response.status_code == 200 and '"isError":false' in response.text, response.text


def modern_trigger(instance: Instance, key: str, request_id: int, tool: str) -> None:
    params = {"name": tool, "arguments": {}, "_meta": CAPS_META}
    assert modern_call(instance.url, key, request_id, "tools/call", params).status_code == 200


def result(response: httpx.Response) -> Any:
    message = response.json()
    assert "result" in message, message
    return message["result"]


def methods(events: list[Event]) -> list[str]:
    return [event.data.get("method", "") for event in events]


def update_reaches_stream_on_b(pair: tuple[Instance, Instance], key: str) -> list[Event]:
    """The GET stream opens on B first; the subscribe and the update go to A; the marker (a tool
    list change) is published on B after the update. Returns what B's stream delivered up to it."""
    a, b = pair
    session_id = initialize(a.url, key)
    with get_stream(b, key, session_id) as stream:
        assert stream.status == 200 and stream.response_headers["content-type"] == "text/event-stream"
        assert result(call(a.url, key, session_id, 2, "resources/subscribe", {"uri": WATCHED})) == {}
        trigger(a, key, session_id, 3, "test_trigger_resource_update")
        trigger(b, key, session_id, 4, "test_trigger_tool_change")
        return stream.until(lambda message: message.get("method") == TOOLS_CHANGED)


def assert_update_then_marker(delivered: list[Event]) -> None:
    assert methods(delivered) == [UPDATED, TOOLS_CHANGED]
    assert delivered[0].data["params"] == {"uri": WATCHED}
    assert all(event.id for event in delivered)  # ids a reconnecting client resumes after


def test_2025_update_published_on_a_reaches_a_get_stream_on_b(
    pair: tuple[Instance, Instance], keys: dict[str, str]
) -> None:
    """Given a GET stream on B and a subscription made on A, When a tool on A announces an update
    of the resource, Then B's stream delivers notifications/resources/updated for it (before the
    later marker)."""
    assert_update_then_marker(update_reaches_stream_on_b(pair, keys["alice"]))


def test_control_an_in_memory_log_fails_the_cross_instance_test(
    aws: AwsStack, keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control: with the log kept in each instance's memory, B's stream gets B's marker but never
    A's update, so the test above detects a log that is not shared."""
    monkeypatch.setattr(notification_log_module, "NotificationLog", InMemoryLog)
    with (
        endpoint_instance(aws, extra_tools=(conformance,), MCP_SUBSCRIPTIONS="true") as a,
        endpoint_instance(aws, extra_tools=(conformance,), MCP_SUBSCRIPTIONS="true") as b,
    ):
        delivered = update_reaches_stream_on_b((a, b), keys["alice"])
    with pytest.raises(AssertionError):
        assert_update_then_marker(delivered)
    assert methods(delivered) == [TOOLS_CHANGED]  # why: the update published on A never arrived


def test_2026_listen_on_b_receives_what_a_publishes(pair: tuple[Instance, Instance], keys: dict[str, str]) -> None:
    """Given subscriptions/listen on B for the watched resource and tool list changes, When A
    announces an update and then a tool list change, Then B acknowledges first (with the honoured
    filter, an unknown URI left out) and delivers both, every message tagged with the request id."""
    a, b = pair
    key = keys["alice"]
    wanted = {"toolsListChanged": True, "resourceSubscriptions": [WATCHED, "test://no-such-resource"]}
    body = {"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
            "params": {"_meta": CAPS_META, "notifications": wanted}}  # fmt: skip
    listen_headers = headers(key, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"})
    with EventStream("POST", b.url, listen_headers, body) as stream:
        ack = stream.until(lambda message: True)[0].data
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"] == {
            "_meta": {SUBSCRIPTION_ID: "sub-1"},
            "notifications": {"toolsListChanged": True, "resourceSubscriptions": [WATCHED]},
        }
        modern_trigger(a, key, 2, "test_trigger_resource_update")
        modern_trigger(a, key, 3, "test_trigger_tool_change")
        delivered = stream.until(lambda message: message.get("method") == TOOLS_CHANGED)
    assert methods(delivered) == [UPDATED, TOOLS_CHANGED]
    assert delivered[0].data["params"]["uri"] == WATCHED
    assert all(event.data["params"]["_meta"] == {SUBSCRIPTION_ID: "sub-1"} for event in delivered)


def test_2025_unsubscribe_stops_delivery(pair: tuple[Instance, Instance], keys: dict[str, str]) -> None:
    """Given a delivered update, When the client unsubscribes (on A) and the resource is updated
    again, Then no further update reaches the stream on B before the next marker."""
    a, b = pair
    key = keys["alice"]
    session_id = initialize(a.url, key)
    assert result(call(a.url, key, session_id, 2, "resources/subscribe", {"uri": WATCHED})) == {}
    with get_stream(b, key, session_id) as stream:
        trigger(a, key, session_id, 3, "test_trigger_resource_update")
        trigger(a, key, session_id, 4, "test_trigger_tool_change")
        assert methods(stream.until(lambda message: message.get("method") == TOOLS_CHANGED)) == [UPDATED, TOOLS_CHANGED]
        assert result(call(a.url, key, session_id, 5, "resources/unsubscribe", {"uri": WATCHED})) == {}
        trigger(a, key, session_id, 6, "test_trigger_resource_update")
        trigger(b, key, session_id, 7, "test_trigger_tool_change")
        assert methods(stream.until(lambda message: message.get("method") == TOOLS_CHANGED)) == [TOOLS_CHANGED]


def test_another_principal_cannot_subscribe_or_listen_on_your_session(
    pair: tuple[Instance, Instance], keys: dict[str, str]
) -> None:
    """Given alice's transport session, When bob subscribes on it or opens its GET stream (on
    either instance), Then both get 404, as for a session that does not exist."""
    a, b = pair
    session_id = initialize(a.url, keys["alice"])
    subscribe = call(b.url, keys["bob"], session_id, 2, "resources/subscribe", {"uri": WATCHED})
    assert subscribe.status_code == 404
    foreign = httpx.get(a.url, headers={**legacy(keys["bob"], session_id), "Accept": "text/event-stream"}, timeout=30)
    assert foreign.status_code == 404
    assert result(call(a.url, keys["alice"], session_id, 3, "resources/subscribe", {"uri": WATCHED})) == {}


def test_delete_ends_the_subscriptions_and_the_stream(
    pair: tuple[Instance, Instance], keys: dict[str, str], aws: AwsStack
) -> None:
    """Given a subscription and a GET stream on B, When the session is deleted on A, Then the
    stream ends without delivering what is published afterwards (a tool list change, from a
    2026 call), and nothing of the subscription is left in the table."""
    a, b = pair
    key = keys["alice"]
    session_id = initialize(a.url, key)
    assert result(call(a.url, key, session_id, 2, "resources/subscribe", {"uri": WATCHED})) == {}
    with get_stream(b, key, session_id) as stream:
        assert httpx.delete(a.url, headers=legacy(key, session_id), timeout=30).status_code == 200
        modern_trigger(a, key, 3, "test_trigger_tool_change")
        assert stream.rest() == []  # ended by the server (before the 20 s cap), nothing delivered
    left = aws.client("dynamodb").query(
        TableName=aws.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"subs#{session_id}"}},
        ConsistentRead=True,
    )
    assert left["Items"] == []


def test_a_newer_get_stream_replaces_the_older_one(pair: tuple[Instance, Instance], keys: dict[str, str]) -> None:
    """Given a GET stream on A, When the client opens another on B (a reconnect that A never saw
    as a disconnect, as behind a Function URL), Then once B delivers, A ends without delivering
    anything published after: each message goes on one stream only (2025 transport)."""
    a, b = pair
    key = keys["alice"]
    session_id = initialize(a.url, key)
    with get_stream(a, key, session_id) as older, get_stream(b, key, session_id) as newer:
        trigger(a, key, session_id, 2, "test_trigger_tool_change")
        assert methods(newer.until(lambda message: message.get("method") == TOOLS_CHANGED)) == [TOOLS_CHANGED]
        trigger(a, key, session_id, 3, "test_trigger_prompt_change")  # after B holds the stream
        assert methods(newer.until(lambda message: message.get("method") == PROMPTS_CHANGED)) == [PROMPTS_CHANGED]
        assert PROMPTS_CHANGED not in methods(older.rest())  # A ended (before its 20 s cap)


def test_off_advertises_nothing_and_the_methods_are_not_found(aws: AwsStack, keys: dict[str, str]) -> None:
    """Given the stack option off (the default), Then neither era advertises subscribe or
    listChanged, resources/subscribe and subscriptions/listen answer -32601, and GET is 405."""
    key = keys["alice"]
    with endpoint_instance(aws, extra_tools=(conformance,)) as instance:
        params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        init = httpx.post(instance.url, headers=headers(key), json=body, timeout=30)
        session_id = init.headers["mcp-session-id"]
        discover = result(modern_call(instance.url, key, 2, "server/discover", {"_meta": CAPS_META}))
        for capabilities in (result(init)["capabilities"], discover["capabilities"]):
            assert "subscribe" not in capabilities["resources"]
            assert not any(capabilities[name].get("listChanged") for name in ("tools", "resources", "prompts"))
        subscribe = call(instance.url, key, session_id, 3, "resources/subscribe", {"uri": WATCHED}).json()
        assert subscribe["error"]["code"] == -32601
        listen = modern_call(instance.url, key, 4, "subscriptions/listen", {"_meta": CAPS_META, "notifications": {}})
        assert (listen.status_code, listen.json()["error"]["code"]) == (404, -32601)
        get = httpx.get(instance.url, headers={**legacy(key, session_id), "Accept": "text/event-stream"}, timeout=30)
        assert get.status_code == 405 and "GET" not in get.headers["allow"]


# -- issue 26 item 6: a subscription is authorized as a read, and updates stay with their principal ---
def open_handle(instance: Instance, key: str) -> str:
    opened = modern_call(
        instance.url, key, 1, "tools/call", {"name": "open_session", "arguments": {}, "_meta": CAPS_META}
    )
    return str(final_message(opened)["result"]["structuredContent"]["session"])


def listen_body(request_id: str, uris: list[str]) -> dict[str, Any]:
    notifications = {"toolsListChanged": True, "resourceSubscriptions": uris}
    return {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen",
            "params": {"_meta": CAPS_META, "notifications": notifications}}  # fmt: skip


def listen_headers(key: str) -> dict[str, str]:
    return headers(key, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"})


def test_a_uri_another_principal_cannot_read_is_not_subscribed_to_in_either_era(
    pair: tuple[Instance, Instance], keys: dict[str, str]
) -> None:
    """Given alice's session handle, When bob subscribes (2025) to its notes on B, Then he gets
    exactly what his resources/read of it gets (-32002), on A and on B; and bob's
    subscriptions/listen (2026) does not honour it, while alice's does. (Bob's subscribe
    answered {} and his listen honoured it, while his read answered -32002.)"""
    a, b = pair
    uri = notes_uri(open_handle(a, keys["alice"]))
    bobs = initialize(b.url, keys["bob"])
    read = call(a.url, keys["bob"], bobs, 2, "resources/read", {"uri": uri}).json()
    subscribed = call(b.url, keys["bob"], bobs, 3, "resources/subscribe", {"uri": uri}).json()
    assert read["error"]["code"] == -32002 and subscribed["error"] == read["error"], (read, subscribed)
    for key, honoured in ((keys["bob"], []), (keys["alice"], [uri])):
        with EventStream("POST", b.url, listen_headers(key), listen_body("sub-1", [uri])) as stream:
            ack = stream.until(lambda message: True)[0].data
        assert ack["params"]["notifications"]["resourceSubscriptions"] == honoured, ack


def test_one_principals_update_of_a_private_resource_never_reaches_another_principals_stream(
    pair: tuple[Instance, Instance], keys: dict[str, str], aws: AwsStack
) -> None:
    """Given bob's GET stream on B subscribed to alice's notes (the subscription written straight
    into the table, as if it had been accepted) and to the public watched resource, and alice's
    stream on A subscribed to both, When alice announces an update of her notes and of the
    watched resource (then a marker), Then alice's stream delivers both, and bob's only the
    watched one: the log keeps a private resource's updates per principal. (Keyed by URI alone,
    alice's notes update reached bob.)"""
    a, b = pair
    alice, bob = keys["alice"], keys["bob"]
    uri = notes_uri(open_handle(a, alice))
    alices, bobs = initialize(a.url, alice), initialize(b.url, bob)
    for subscribed in (uri, WATCHED):
        assert result(call(a.url, alice, alices, 2, "resources/subscribe", {"uri": subscribed})) == {}
    assert result(call(b.url, bob, bobs, 2, "resources/subscribe", {"uri": WATCHED})) == {}
    SessionSubscriptions(aws.table, b.endpoint.store.gateway).subscribe(bobs, uri, owner="bob")
    with get_stream(a, alice, alices) as alices_stream, get_stream(b, bob, bobs) as bobs_stream:
        announce = {"name": "announce_notes", "arguments": {"handle": uri.split("/")[2]}}
        assert '"isError":false' in call(a.url, alice, alices, 3, "tools/call", announce).text
        trigger(a, alice, alices, 4, "test_trigger_resource_update")
        trigger(a, alice, alices, 5, "test_trigger_tool_change")
        to_alice = alices_stream.until(lambda message: message.get("method") == TOOLS_CHANGED)
        to_bob = bobs_stream.until(lambda message: message.get("method") == TOOLS_CHANGED)
    updated = [event.data["params"]["uri"] for event in to_alice if event.data.get("method") == UPDATED]
    assert updated == [uri, WATCHED]
    assert [(event.data.get("method"), event.data.get("params", {}).get("uri")) for event in to_bob] == [
        (UPDATED, WATCHED),
        (TOOLS_CHANGED, None),
    ]


# -- issue 39: a listen is authorized by the policies as a read ---------------------------------------
WATCHED_FOR_WATCHERS = f"""
@id("everyone")
permit(principal, action, resource);

@id("watched-for-watchers")
forbid(principal, action == Action::"read_resource", resource)
when {{ resource.uri == "{WATCHED}" }}
unless {{ principal in Group::"watchers" }};
"""


def assert_listen_refused_as_the_read(instance: Instance, keys: dict[str, str]) -> None:
    """alice's read of the watched resource and her listen to it get the same refusal (-31010,
    HTTP 403, naming the policy), and no stream opens; carol, a watcher, listens to it."""
    alice, carol = keys["alice"], keys["carol"]
    read = modern_call(instance.url, alice, 1, "resources/read", {"uri": WATCHED, "_meta": CAPS_META})
    listen = httpx.post(instance.url, headers=listen_headers(alice), json=listen_body("sub-1", [WATCHED]), timeout=30)
    assert (read.status_code, listen.status_code) == (403, 403), listen.text
    assert listen.headers["content-type"].startswith("application/json")
    refusal = listen.json()
    assert refusal["id"] == "sub-1" and refusal["error"] == read.json()["error"]
    error = refusal["error"]
    assert error["code"] == FORBIDDEN
    assert error["data"] == {"action": "read_resource", "name": WATCHED, "policies": ["watched-for-watchers"]}
    with EventStream("POST", instance.url, listen_headers(carol), listen_body("sub-2", [WATCHED])) as stream:
        ack = stream.until(lambda message: True)[0].data
    assert ack["params"]["notifications"]["resourceSubscriptions"] == [WATCHED], ack


def test_2026_listen_to_a_resource_the_policies_forbid_reading_is_refused_as_its_read(
    aws: AwsStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given a policy that lets only watchers read the watched resource, When alice (not one)
    opens subscriptions/listen for it, Then she gets what her resources/read gets: -31010, HTTP
    403, the policy named, before any stream opens; carol (a watcher) listens to it. The control:
    with the listen deciding without the policies (as before), alice's listen is acknowledged."""
    (tmp_path / "reads.cedar").write_text(WATCHED_FOR_WATCHERS)
    store = ApiKeyStore(aws.table, aws.client("dynamodb"))
    keys = {"alice": store.mint("alice"), "carol": store.mint("carol", groups=["watchers"])}
    tools = (conformance, notify_tools)
    with endpoint_instance(
        aws, extra_tools=tools, MCP_SUBSCRIPTIONS="true", MCP_POLICIES_DIR=str(tmp_path)
    ) as instance:
        assert_listen_refused_as_the_read(instance, keys)
        listener = instance.endpoint.listener
        assert listener is not None
        checked = listener.listen
        monkeypatch.setattr(listener, "listen", lambda *args, access=None: checked(*args))  # access dropped
        with pytest.raises(AssertionError):
            assert_listen_refused_as_the_read(instance, keys)
