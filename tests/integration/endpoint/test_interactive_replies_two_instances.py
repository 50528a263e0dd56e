"""2025 revisions: a server-to-client request on the call's stream, answered through any instance.

The call streams from instance A; the client's response POST goes to B (as a Lambda Function URL
would send it), or to A (the in-process fast path). Each cross-instance or security test has a
control beside it: a naive version (delivery in process only; no owner checks) fails the same
assertions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from typing import Any

import pytest

from examples import conformance
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import to_attr
from mcp_platform.adapters.dynamodb.replies import ClientReplies
from mcp_platform.application.interactive.outbound import ServerRequests
from mcp_platform.application.transport_sessions import TransportSessions
from tests.support.endpoint import AwsStack, Instance, alice_and_bob, endpoint_instance, fresh_stack
from tests.support.interactive import open_legacy, reply, text_of, tool_request
from tests.support.sse import EventStream

pytestmark = pytest.mark.integration
ANSWER = {"action": "accept", "content": {"username": "alice", "email": "alice@example.com"}}
Pair = Callable[..., AbstractContextManager[tuple[Instance, Instance]]]


aws = pytest.fixture(fresh_stack, name="aws")  # a fresh emulator per test


keys = pytest.fixture(alice_and_bob, name="keys")


@pytest.fixture()
def pair(aws: AwsStack) -> Iterator[Pair]:
    """Two instances on the stack; ``overrides`` are settings (e.g. a short reply timeout)."""
    with ExitStack() as stack:

        def start(**overrides: str) -> AbstractContextManager[tuple[Instance, Instance]]:
            a = stack.enter_context(endpoint_instance(aws, extra_tools=(conformance,), **overrides))
            b = stack.enter_context(endpoint_instance(aws, extra_tools=(conformance,), **overrides))
            return _Started((a, b))

        yield start


class _Started(AbstractContextManager[tuple[Instance, Instance]]):
    def __init__(self, instances: tuple[Instance, Instance]) -> None:
        self.instances = instances

    def __enter__(self) -> tuple[Instance, Instance]:
        return self.instances

    def __exit__(self, *exc: object) -> None:
        # Every message both instances sent, against the SDK's models (B may only have taken 202s).
        assert sum(instance.recorder.validate_all() for instance in self.instances) > 0


def reply_items(aws: AwsStack) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = aws.client("dynamodb").scan(TableName=aws.table)["Items"]
    return [item for item in found if item[ts.PK]["S"].startswith(ts.CLIENT_REPLY_PREFIX)]


def elicit_and_answer(caller: Instance, answerer: Instance, key: str) -> str:
    """test_elicitation streamed from ``caller``; its request answered by POSTing to ``answerer``."""
    session = open_legacy(caller.url, key)
    body = tool_request(2, "test_elicitation", {"message": "Who are you?"})
    with EventStream("POST", caller.url, session, body) as stream:
        asked = stream.until(lambda m: m.get("method") == "elicitation/create")[-1].data
        assert asked["params"]["message"] == "Who are you?" and isinstance(asked["id"], str)
        answered = reply(answerer.url, session, asked["id"], ANSWER)
        assert answered.status_code == 202, answered.text
        final = stream.until(lambda m: m.get("id") == 2)[-1].data
    assert "alice@example.com" in text_of(final), f"the call did not get the answer: {final}"
    assert reply(answerer.url, session, asked["id"], ANSWER).status_code == 400  # answered already
    return text_of(final)


def test_an_elicitation_answered_through_the_other_instance_reaches_the_call(
    aws: AwsStack, pair: Pair, keys: dict[str, str]
) -> None:
    """Given a 2025 call streaming from A, when the client's response lands on B, then B writes it
    to the reply item, A's poll finds it and the call completes with it; the item is removed."""
    with pair() as (a, b):
        assert elicit_and_answer(a, b, keys["alice"]).startswith("User response: action=accept")
        assert elicit_and_answer(a, a, keys["alice"])  # the same instance: delivered in process
    assert reply_items(aws) == []


def test_control_delivery_in_process_only_fails_the_same_test(
    pair: Pair, keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = ServerRequests.receive

    async def local_only(self: ServerRequests, session_id: str, message: dict[str, Any], *, owner: str) -> None:
        if (session_id, message.get("id")) in self._waiting:  # the naive server: sticky sessions assumed
            await original(self, session_id, message, owner=owner)

    monkeypatch.setattr(ServerRequests, "receive", local_only)
    with pair(MCP_CLIENT_REQUEST_TIMEOUT_SECONDS="2") as (a, b), pytest.raises(AssertionError, match="did not get"):
        elicit_and_answer(a, b, keys["alice"])


def assert_foreign_answers_refused(a: Instance, b: Instance, keys: dict[str, str]) -> None:
    alice = open_legacy(a.url, keys["alice"])
    bob = open_legacy(b.url, keys["bob"])
    with EventStream("POST", a.url, alice, tool_request(2, "test_elicitation", {"message": "Who?"})) as stream:
        asked = stream.until(lambda m: m.get("method") == "elicitation/create")[-1].data
        forged = {"action": "accept", "content": {"username": "bob", "email": "bob@example.com"}}
        as_alice = reply(b.url, {**alice, "Authorization": bob["Authorization"]}, asked["id"], forged)
        assert as_alice.status_code == 404, f"bob's answer in alice's session: {as_alice.status_code}"
        in_own_session = reply(b.url, bob, asked["id"], forged)
        assert in_own_session.status_code == 400, f"bob's answer in his session: {in_own_session.status_code}"
        assert reply(b.url, alice, "srv-" + "A" * 22, ANSWER).status_code == 400  # unknown id
        assert reply(b.url, alice, 7, ANSWER).status_code == 400  # never one of ours
        assert reply(b.url, alice, asked["id"], ANSWER).status_code == 202
        final = stream.until(lambda m: m.get("id") == 2)[-1].data
    assert "alice@example.com" in text_of(final) and "bob" not in text_of(final)


def test_an_answer_from_another_principal_or_for_an_unknown_id_is_refused(pair: Pair, keys: dict[str, str]) -> None:
    """Given alice's call waiting on A, when bob answers it through B (with alice's session id,
    or with his own), then 404 / 400; unknown ids are 400; alice's own answer still completes it."""
    with pair() as (a, b):
        assert_foreign_answers_refused(a, b, keys)


def test_control_answers_without_owner_checks_fail_the_same_test(
    pair: Pair, keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def any_owner(self: TransportSessions, session_id: str, owner: str) -> Any:
        return await asyncio.to_thread(self.store.get_session, session_id, owner=None, consistent=True)

    def unchecked(self: ClientReplies, session_id: str, request_id: Any, *, owner: str, response: str) -> bool:
        self.gateway.call(
            "update_item",
            TableName=self.table_name,
            Key=self._key(session_id, request_id),
            UpdateExpression="SET #resp = :resp",
            ExpressionAttributeNames={"#resp": ts.REPLY_RESPONSE},
            ExpressionAttributeValues={":resp": to_attr(response)},
        )
        return True

    monkeypatch.setattr(TransportSessions, "require", any_owner)
    monkeypatch.setattr(ClientReplies, "deliver", unchecked)
    with pair() as (a, b), pytest.raises(AssertionError, match="bob's answer in alice's session: 202"):
        assert_foreign_answers_refused(a, b, keys)


def test_an_unanswered_request_ends_the_call_with_a_clear_error(pair: Pair, keys: dict[str, str]) -> None:
    """Given a client that never answers, when the reply timeout passes, then the call ends with a
    tool error naming the request; a client without the capability is refused with -32021."""
    with pair(MCP_CLIENT_REQUEST_TIMEOUT_SECONDS="1") as (a, _b):
        session = open_legacy(a.url, keys["alice"])
        with EventStream("POST", a.url, session, tool_request(2, "test_sampling", {"prompt": "hi"})) as stream:
            final = stream.until(lambda m: m.get("id") == 2)[-1].data
        assert final["result"]["isError"] is True
        assert "did not answer sampling/createMessage within 1 s" in text_of(final)
        no_caps = open_legacy(a.url, keys["alice"], capabilities={})
        with EventStream("POST", a.url, no_caps, tool_request(3, "test_elicitation", {"message": "?"})) as stream:
            refused = stream.until(lambda m: m.get("id") == 3)[-1].data
        assert refused["error"]["code"] == -32021, refused
