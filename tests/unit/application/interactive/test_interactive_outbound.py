"""2025 server-to-client requests without a network (the table is a fake that counts its calls),
and the cold-start rule: nothing of the interactive machinery loads at start."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_platform.application.interactive.outbound import ClientRequestFailed, ReplyRefused, ServerRequests
from mcp_platform.protocol import trace_context
from mcp_platform.protocol.interactive import elicitation
from mcp_platform.protocol.request_context import ClientChannel, RequestContext, TransportSession

ROOT = Path(__file__).resolve().parents[4]
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
LAZY_MODULES = (
    "mcp_platform.protocol.interactive",
    "mcp_platform.application.interactive.rounds",
    "mcp_platform.application.interactive.state",
    "mcp_platform.application.interactive.keys",
    "mcp_platform.adapters.dynamodb.request_state_vault",
    "mcp_platform.application.interactive.outbound",
    "mcp_platform.adapters.dynamodb.replies",
)


class FakeReplies:
    """The reply items in memory: ``answers`` is what other instances delivered."""

    def __init__(self) -> None:
        self.expected: list[str] = []
        self.answers: dict[str, str] = {}
        self.calls = 0

    def expect(self, session_id: str, request_id: str, *, owner: str, method: str, ttl_seconds: int) -> None:
        self.calls += 1
        self.expected.append(request_id)

    def deliver(self, session_id: str, request_id: str, *, owner: str, response: str) -> bool:
        self.calls += 1
        return False

    def read(self, session_id: str, request_id: str, *, owner: str) -> str | None:
        self.calls += 1
        return self.answers.get(request_id)

    def discard(self, session_id: str, request_id: str) -> None:
        self.calls += 1


def accept() -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Al"}}


def legacy_call(sent: list[dict[str, Any]], trace: trace_context.TraceContext | None = None) -> RequestContext:
    async def notify(message: dict[str, Any]) -> None:
        sent.append(message)

    return RequestContext(
        "alice",
        "2025-11-25",
        False,
        transport=TransportSession("s" * 32),
        trace=trace,
        channel=ClientChannel(notify=notify),
    )


def test_ids_that_cannot_be_ours_are_refused_without_an_aws_call() -> None:
    replies = FakeReplies()
    outbound = ServerRequests(replies, timeout_seconds=5)  # type: ignore[arg-type]
    for request_id in (7, "1", "srv-short", "srv-" + "A" * 22 + "x"):
        with pytest.raises(ReplyRefused) as refused:
            asyncio.run(outbound.receive("s" * 32, {"id": request_id, "result": {}}, owner="alice"))
        assert refused.value.status == 400
    assert replies.calls == 0


def test_an_answer_on_the_same_instance_is_handed_over_in_process_and_asked_once_per_key() -> None:
    replies, sent = FakeReplies(), []
    outbound = ServerRequests(replies, timeout_seconds=30)  # type: ignore[arg-type]
    call = legacy_call(sent)

    async def scenario() -> list[dict[str, Any]]:
        asker = outbound.for_call(call)
        question = {"name": elicitation("Name?", NAME)}
        waiting = asyncio.ensure_future(asker.ask(question))
        while not sent:
            await asyncio.sleep(0)
        await outbound.receive(
            call.transport_session_id or "", {"id": sent[0]["id"], "result": accept()}, owner="alice"
        )
        first = await waiting
        again = await asker.ask(question)  # a rerun of the tool: answered from what this call holds
        return [first, again]

    first, again = asyncio.run(scenario())
    assert first == again == {"name": accept()}
    assert len(sent) == 1 and sent[0]["method"] == "elicitation/create" and sent[0]["id"] in replies.expected
    assert not any(request_id == sent[0]["id"] for request_id in replies.answers)  # nothing went to the table


def test_an_answer_delivered_elsewhere_is_polled_and_a_malformed_one_fails_the_call() -> None:
    replies, sent = FakeReplies(), []
    outbound = ServerRequests(replies, timeout_seconds=30, poll_base_seconds=0.001)  # type: ignore[arg-type]
    call = legacy_call(sent)

    async def scenario(result: Any) -> Any:
        before = len(sent)
        waiting = asyncio.ensure_future(outbound.for_call(call).ask({"k": elicitation("Name?", NAME)}))
        while len(sent) == before:  # the request is out (its item was written before it)
            await asyncio.sleep(0)
        replies.answers[replies.expected[-1]] = json.dumps({"jsonrpc": "2.0", "id": "x", "result": result})
        return await waiting

    assert asyncio.run(scenario(accept())) == {"k": accept()}
    with pytest.raises(ClientRequestFailed, match="malformed"):
        asyncio.run(scenario({"action": "sure"}))


class DeliveringReplies(FakeReplies):
    """Another instance's view: the reply item exists, so a delivered answer is written."""

    def deliver(self, session_id: str, request_id: str, *, owner: str, response: str) -> bool:
        self.calls += 1
        self.answers[request_id] = response
        return True


@pytest.mark.parametrize("same_instance", [True, False], ids=["same-instance", "other-instance"])
@pytest.mark.parametrize("odd", [math.nan, 10**200, "x\ud800"], ids=["nan", "10**200", "lone-surrogate"])
def test_issue26_an_answer_that_cannot_be_kept_is_refused_400_and_the_call_told_at_once(
    same_instance: bool, odd: Any
) -> None:
    """Given a 2025 elicitation answered with a value no store can keep, When the response POST
    reaches the waiting instance or another one, Then it is refused (400) and the waiting call
    ends with a clear error naming the field (it was handed the value, or stored it as text)."""
    replies, sent = DeliveringReplies(), []
    outbound = ServerRequests(replies, timeout_seconds=30, poll_base_seconds=0.001)  # type: ignore[arg-type]
    receiving = outbound if same_instance else ServerRequests(replies, timeout_seconds=30)  # type: ignore[arg-type]
    call = legacy_call(sent)

    async def scenario() -> tuple[int, str]:
        waiting = asyncio.ensure_future(outbound.for_call(call).ask({"k": elicitation("Name?", NAME)}))
        while not sent:
            await asyncio.sleep(0)
        answer = {"id": sent[0]["id"], "result": {"action": "accept", "content": {"name": odd}}}
        with pytest.raises(ReplyRefused) as refused:
            await receiving.receive(call.transport_session_id or "", answer, owner="alice")
        with pytest.raises(ClientRequestFailed) as failed:
            await waiting
        return refused.value.status, str(failed.value)

    status, failure = asyncio.run(scenario())
    assert status == 400 and "result.content.name" in failure and "cannot be kept" in failure


def test_an_unanswered_request_ends_with_a_clear_error() -> None:
    outbound = ServerRequests(FakeReplies(), timeout_seconds=0.01, poll_base_seconds=0.001)  # type: ignore[arg-type]
    with pytest.raises(ClientRequestFailed, match="did not answer elicitation/create"):
        asyncio.run(outbound.for_call(legacy_call([])).ask({"k": elicitation("Name?", NAME)}))


def test_nothing_of_the_interactive_machinery_is_imported_at_start() -> None:
    """Cold start: the API, the request-state codec, the secret fetch and the reply plumbing load on
    first use (only the package itself, InputRequired and the method set, loads at start)."""
    probe = (
        f"MODULES = {LAZY_MODULES!r}; import json, sys, endpoint_app; "
        "print(json.dumps([m for m in MODULES if m in sys.modules]))"
    )
    env = {
        **os.environ,
        "SESSION_TABLE_NAME": "sessions",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        "MCP_AUTH": "api_key",
        "MCP_REQUEST_STATE_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:000000000000:secret:keys",
        "PYTHONPATH": os.pathsep.join(str(ROOT / p) for p in ("layers/platform/python", "functions/endpoint")),
    }
    env.pop("AWS_LAMBDA_FUNCTION_NAME", None)
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_a_server_request_names_the_calls_span_as_its_parent() -> None:
    """2025: the question sent on the call's stream carries the call's trace in ``params._meta``
    (SEP-414), so the client's handling of it joins the call's trace."""
    replies, sent = FakeReplies(), list[dict[str, Any]]()
    outbound = ServerRequests(replies, timeout_seconds=30, poll_base_seconds=0.001)  # type: ignore[arg-type]
    trace = trace_context.request_trace({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
    call = legacy_call(sent, trace)
    question = elicitation("Name?", NAME)

    async def scenario() -> Any:
        waiting = asyncio.ensure_future(outbound.for_call(call).ask({"k": question}))
        while not sent:
            await asyncio.sleep(0)
        replies.answers[replies.expected[-1]] = json.dumps({"jsonrpc": "2.0", "id": "x", "result": accept()})
        return await waiting

    # When the call asks its client
    asyncio.run(scenario())
    # Then the request names the call's span as its parent; the question itself is unchanged
    meta = sent[0]["params"]["_meta"]
    assert meta == {"traceparent": f"00-4bf92f3577b34da6a3ce929d0e0e4736-{call.trace.span_id}-01"}
    assert {k: v for k, v in sent[0]["params"].items() if k != "_meta"} == question.params
    assert "_meta" not in question.params
