"""The stores behind the notification and interactive ports translate the SDK's errors into the
ports' errors, and the use cases that retry a failed read (a stream's poll, a 2025 call waiting
for its answer) retry on those: no caller above the adapters needs to know botocore.

Each retry test has a control: the same scenario with the adapter's translation removed lets the
raw ``ClientError`` through, which the caller (rightly) no longer catches, so the test fails."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from mcp_platform.adapters.dynamodb import notification_log as log_module
from mcp_platform.adapters.dynamodb import replies as replies_module
from mcp_platform.adapters.dynamodb.codec import to_item
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.adapters.dynamodb.notification_log import NotificationLog
from mcp_platform.adapters.dynamodb.replies import ClientReplies
from mcp_platform.adapters.dynamodb.subscriptions import LiveSessions, SessionSubscriptions
from mcp_platform.application.interactive.outbound import ServerRequests
from mcp_platform.application.interactive.ports import InteractiveStoreError
from mcp_platform.application.notifications.ports import Notice, NotificationStoreError
from mcp_platform.application.sessions.errors import SessionNotFound, StoreThrottled
from mcp_platform.protocol.clock import ManualClock
from mcp_platform.protocol.interactive import elicitation
from mcp_platform.protocol.request_context import ClientChannel, RequestContext, TransportSession
from mcp_platform.transport.stream_pump import StreamPump

NOW = 1_800_000_000.0
ENTRY = "2027-01-15T08:00:00.000000Z#0badcafe"


def client_error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "injected"}}, operation)  # type: ignore[arg-type]


class FlakyTable:
    """A DynamoDB client whose reads fail ``failures`` times, then answer. The failure is an
    error DynamoDB answers (AccessDenied, while a role's policy propagates): the adapters must
    translate it; a 5xx or a lost connection the gateway already makes ``StoreUnavailable``."""

    def __init__(self, failures: int, item: dict[str, Any]) -> None:
        self.failures = failures
        self.item = item
        self.reads = 0

    def _read(self, operation: str) -> None:
        self.reads += 1
        if self.reads <= self.failures:
            raise client_error("AccessDeniedException", operation)

    def query(self, **params: Any) -> dict[str, Any]:
        self._read("Query")
        return {"Items": [self.item]}

    def get_item(self, **params: Any) -> dict[str, Any]:
        self._read("GetItem")
        return {"Item": self.item}

    def put_item(self, **params: Any) -> dict[str, Any]:
        return {}

    def delete_item(self, **params: Any) -> dict[str, Any]:
        return {}


@contextlib.contextmanager
def untranslated(error: type[Exception], what: str) -> Iterator[None]:
    """The naive adapter: the SDK's error goes up as it is."""
    yield


class VirtualTimer:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    async def wait(self, seconds: float, stop: asyncio.Event) -> bool:
        self.t += seconds
        await asyncio.sleep(0)
        return stop.is_set()


def stream_of_one_failing_poll() -> tuple[bytes, FlakyTable]:
    """A stream whose first poll of the log fails with a DynamoDB server error."""
    entry = {"pk": "notify#lists", "sk": ENTRY, "notice": "tools", "ttl": int(NOW) + 900}
    table = FlakyTable(failures=1, item=to_item(entry))
    log = NotificationLog("t", DynamoGateway(table), clock=ManualClock(NOW))
    delivered: list[Notice] = []

    def poll() -> list[Notice] | None:
        found = [n for n in log.read(log.lists_topic, "") if n not in delivered]
        delivered.extend(found)
        return found

    body: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        body.append(message.get("body", b""))

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()  # the client stays
        return {}

    pump = StreamPump(max_stream_seconds=2.0, timer=VirtualTimer())
    capped = asyncio.run(pump.run(send, receive, poll, lambda notice: notice.sk.encode()))
    assert capped
    return b"".join(body), table


def test_a_poll_failed_by_a_dynamodb_error_is_retried_and_the_entry_delivered(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        body, table = stream_of_one_failing_poll()
    assert ENTRY.encode() in body and table.reads >= 2
    assert "notification poll failed; polling again" in caplog.text


def test_control_an_untranslated_sdk_error_ends_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_module, "translated", untranslated)
    with pytest.raises(ClientError):
        stream_of_one_failing_poll()


def ask_with_one_failing_reply_poll() -> dict[str, dict[str, Any]]:
    """A 2025 call waiting for an answer delivered elsewhere; its first poll of the item fails."""
    answer = {"jsonrpc": "2.0", "id": "x", "result": {"action": "accept", "content": {"name": "Al"}}}
    item = {"pk": "reply#s", "sk": "k", "owner": "alice", "response": json.dumps(answer)}
    replies = ClientReplies("t", DynamoGateway(FlakyTable(failures=1, item=to_item(item))), clock=ManualClock(NOW))
    outbound = ServerRequests(replies, timeout_seconds=30, poll_base_seconds=0.001)

    async def notify(message: dict[str, Any]) -> None:
        return None

    call = RequestContext(
        "alice", "2025-11-25", False, transport=TransportSession("s" * 32), channel=ClientChannel(notify=notify)
    )
    return asyncio.run(outbound.for_call(call).ask({"k": elicitation("Name?", {"type": "object"})}))


def test_a_reply_poll_failed_by_a_dynamodb_error_is_polled_again() -> None:
    assert ask_with_one_failing_reply_poll() == {"k": {"action": "accept", "content": {"name": "Al"}}}


def test_control_an_untranslated_reply_poll_error_fails_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replies_module, "translated", untranslated)
    with pytest.raises(ClientError):
        ask_with_one_failing_reply_poll()


class FailingGateway:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def call(self, operation: str, **params: Any) -> dict[str, Any]:
        raise self.error

    def put_new(self, table_name: str, item: dict[str, Any]) -> bool:
        raise self.error


@pytest.mark.parametrize(
    "error", [client_error("AccessDeniedException", "Query"), EndpointConnectionError(endpoint_url="x")]
)
def test_sdk_errors_of_the_stores_become_the_ports_errors(error: Exception) -> None:
    gateway: Any = FailingGateway(error)
    with pytest.raises(NotificationStoreError):
        NotificationLog("t", gateway).publish_list_changed("tools")
    with pytest.raises(NotificationStoreError):
        SessionSubscriptions("t", gateway).snapshot("s", owner="alice")
    with pytest.raises(NotificationStoreError):
        SessionSubscriptions("t", gateway).release_stream("s", "holder")
    with pytest.raises(InteractiveStoreError):
        ClientReplies("t", gateway).read("s", "r", owner="alice")
    with pytest.raises(InteractiveStoreError):
        ClientReplies("t", gateway).deliver("s", "r", owner="alice", response="{}")


def test_a_throttle_stays_store_throttled_and_a_lost_lease_is_no_error() -> None:
    gateway: Any = FailingGateway(StoreThrottled("query throttled"))
    with pytest.raises(StoreThrottled):
        SessionSubscriptions("t", gateway).snapshot("s", owner="alice")
    newer: Any = FailingGateway(client_error("ConditionalCheckFailedException", "DeleteItem"))
    SessionSubscriptions("t", newer).release_stream("s", "holder")  # a newer stream holds it: nothing to do
    assert ClientReplies("t", newer).deliver("s", "r", owner="alice", response="{}") is False


class Sessions:
    def __init__(self, error: Exception | None) -> None:
        self.error = error

    def get_session(self, session_id: str, *, owner: str | None = None, consistent: bool) -> object:
        if self.error is not None:
            raise self.error
        return object()


def test_a_session_is_alive_until_it_is_not_found_and_a_failed_read_is_a_store_error() -> None:
    assert LiveSessions(Sessions(None)).alive("s", "alice") is True  # type: ignore[arg-type]
    assert LiveSessions(Sessions(SessionNotFound("s"))).alive("s", "alice") is False  # type: ignore[arg-type]
    with pytest.raises(NotificationStoreError):
        LiveSessions(Sessions(client_error("InternalServerError", "GetItem"))).alive("s", "alice")  # type: ignore[arg-type]


class OneError:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def get_item(self, **params: Any) -> dict[str, Any]:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        client_error("InternalServerError", "GetItem"),
        ClientError({"Error": {"Code": "Oops"}, "ResponseMetadata": {"HTTPStatusCode": 503}}, "GetItem"),  # type: ignore[arg-type]
        EndpointConnectionError(endpoint_url="x"),
    ],
)
def test_the_gateway_makes_dynamodb_failures_the_stores_error(error: Exception) -> None:
    """A 5xx or an unreachable DynamoDB leaves the gateway as StoreUnavailable (answered -31004);
    an answer (a failed condition, a validation error) stays the SDK's for its caller to read."""
    from mcp_platform.application.sessions.errors import StoreUnavailable

    with pytest.raises(StoreUnavailable):
        DynamoGateway(OneError(error)).call("get_item")
    answer = client_error("ConditionalCheckFailedException", "GetItem")
    with pytest.raises(ClientError):
        DynamoGateway(OneError(answer)).call("get_item")
