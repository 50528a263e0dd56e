"""2026-07-28 rounds through the protocol core (no network): which answers a run may use, what an
InputRequiredResult carries, and that a state is bound and used once.

The table's one-time check is played by an in-memory conditional put (DynamoDB's
``attribute_not_exists``); the cross-instance version is tests/integration/endpoint/
test_interactive_two_instances.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from botocore.exceptions import ClientError

from examples import conformance
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.adapters.dynamodb.replies import ClientReplies
from mcp_platform.adapters.dynamodb.request_state_vault import RequestStateVault
from mcp_platform.application.interactive.keys import StaticKeyRing
from mcp_platform.application.interactive.rounds import RoundInteraction
from mcp_platform.application.interactive.services import InteractiveServices
from mcp_platform.application.server import McpServer
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.clock import ManualClock
from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.interactive import InputRequired, elicitation
from mcp_platform.protocol.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    JsonRpcError,
    Request,
)
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.protocol.resources import resource
from tests.support.services import make_services

ALL_CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class MemoryTable:
    """A DynamoDB client that only does put_item with ``attribute_not_exists``, as DynamoDB decides it."""

    def __init__(self) -> None:
        self.items: set[str] = set()

    def put_item(self, **params: Any) -> dict[str, Any]:
        assert params["ConditionExpression"] == "attribute_not_exists(#pk)"
        key = params["Item"]["pk"]["S"]
        if key in self.items:
            raise ClientError({"Error": {"Code": "ConditionalCheckFailedException", "Message": "x"}}, "PutItem")
        self.items.add(key)
        return {}


@resource(uri="test://asks-first", description="A resource read that asks which part to read.")
async def asks_first(ctx: ToolContext) -> str:
    answer = await ctx.elicit("Which part?", {"type": "object", "properties": {"part": {"type": "string"}}}, key="part")
    return f"part {answer.content.get('part')}"


def make_server(clock: ManualClock | None = None) -> McpServer:
    keys = StaticKeyRing("k1", {"k1": b"unit-test-key-" * 4})
    vault = RequestStateVault(keys, DynamoGateway(MemoryTable()), "sessions", clock=clock or ManualClock())
    services = make_services(
        interactive=InteractiveServices(
            vault=lambda: vault, replies=lambda: ClientReplies("sessions", DynamoGateway(MemoryTable()))
        )
    )
    catalog = Catalog.discover(conformance)
    catalog.add(asks_first)
    return McpServer(catalog, ToolCallRunner(services), services=services)


def call(server: McpServer, method: str, params: dict[str, Any], *, principal: str = "alice", caps: Any = None) -> Any:
    context = RequestContext(principal, "2026-07-28", True, declared_capabilities=ALL_CAPS if caps is None else caps)
    try:
        return asyncio.run(server.handle(Request(method, params, 1), context))
    except JsonRpcError as refused:
        return refused


def tool(name: str, **params: Any) -> dict[str, Any]:
    return {"name": name, "arguments": {}, **params}


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def test_three_rounds_carry_earlier_answers_in_the_state_and_results_are_never_cacheable() -> None:
    server = make_server()
    first = call(server, "tools/call", tool("test_input_required_result_multi_round"))
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["step1"]
    assert "ttlMs" not in first and "cacheScope" not in first
    second = call(
        server,
        "tools/call",
        tool(
            "test_input_required_result_multi_round",
            inputResponses={"step1": accept(name="Alice"), "step2": accept(color="early")},  # step2 not asked yet
            requestState=first["requestState"],
        ),
    )
    assert list(second["inputRequests"]) == ["step2"] and second["requestState"] != first["requestState"]
    third = call(
        server,
        "tools/call",
        tool(
            "test_input_required_result_multi_round",
            inputResponses={"step2": accept(color="blue")},
            requestState=second["requestState"],
        ),
    )
    assert third["resultType"] == "complete" and third["content"][0]["text"] == "Alice likes blue."


def test_a_state_is_used_once_and_bound_to_its_principal_and_request() -> None:
    server = make_server()
    first = call(server, "tools/call", tool("test_input_required_result_request_state"))
    retry = tool(
        "test_input_required_result_request_state",
        inputResponses={"confirm": accept(ok=True)},
        requestState=first["requestState"],
    )
    assert isinstance(call(server, "tools/call", retry, principal="bob"), JsonRpcError)  # another principal
    other_tool = {**retry, "name": "test_input_required_result_tampered_state"}
    assert isinstance(call(server, "tools/call", other_tool), JsonRpcError)  # another request
    done = call(server, "tools/call", retry)
    assert done["content"][0]["text"].startswith("state-ok")
    replayed = call(server, "tools/call", retry)
    assert isinstance(replayed, JsonRpcError) and replayed.code == INVALID_PARAMS
    assert "already used" in replayed.message


def test_an_expired_state_is_refused_by_every_instance_clock() -> None:
    clock = ManualClock()
    server = make_server(clock)
    first = call(server, "tools/call", tool("test_input_required_result_elicitation"))
    clock.advance(901)
    retry = tool(
        "test_input_required_result_elicitation",
        inputResponses={"user_name": accept(name="Al")},
        requestState=first["requestState"],
    )
    refused = call(server, "tools/call", retry)
    assert isinstance(refused, JsonRpcError) and refused.code == INVALID_PARAMS and "expired" in refused.message


def test_missing_wrong_and_malformed_responses() -> None:
    server = make_server()
    wrong = call(server, "tools/call", tool("test_input_required_result_elicitation", inputResponses={"x": accept()}))
    assert wrong["resultType"] == "input_required" and list(wrong["inputRequests"]) == ["user_name"]
    for bad in ({"user_name": 12345}, {"user_name": {"action": "maybe"}}):
        refused = call(server, "tools/call", tool("test_input_required_result_elicitation", inputResponses=bad))
        assert isinstance(refused, JsonRpcError) and refused.code == INVALID_PARAMS and "user_name" in refused.message
    for bad_params in ({"inputResponses": None}, {"requestState": 7}):
        refused = call(server, "tools/call", tool("test_input_required_result_elicitation", **bad_params))
        assert isinstance(refused, JsonRpcError) and refused.code == INVALID_PARAMS


def test_prompts_and_resource_reads_ask_too_and_only_what_the_client_declared_is_asked() -> None:
    server = make_server()
    asked = call(server, "prompts/get", {"name": "test_input_required_result_prompt"})
    assert asked["resultType"] == "input_required" and "user_context" in asked["inputRequests"]
    read = call(server, "resources/read", {"uri": "test://asks-first"})
    assert read["resultType"] == "input_required" and "ttlMs" not in read and "cacheScope" not in read
    answered = {"inputResponses": {"part": accept(part="2")}, "requestState": read["requestState"]}
    retry = {"uri": "test://asks-first", **answered}
    done = call(server, "resources/read", retry)
    assert done["contents"][0]["text"] == "part 2" and done["ttlMs"] == 0  # the complete read has its hints
    gated = call(server, "tools/call", tool("test_input_required_result_capabilities"), caps={"sampling": {}})
    assert [r["method"] for r in gated["inputRequests"].values()] == ["sampling/createMessage"]
    refused = call(server, "tools/call", tool("test_input_required_result_elicitation"), caps={"sampling": {}})
    assert isinstance(refused, JsonRpcError) and refused.code == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert refused.data == {"requiredCapabilities": {"elicitation": {}}}


def test_an_answer_is_used_only_for_the_question_it_was_given_to() -> None:
    interaction = RoundInteraction({"k": accept(name="A")}, {}, None, 1)
    asked = {"k": elicitation("What is your name?", NAME)}
    assert asyncio.run(interaction.ask(asked))["k"]["content"] == {"name": "A"}
    changed = RoundInteraction({"k": accept(name="A")}, {}, {"k": "digest of another question"}, 2)
    with pytest.raises(InputRequired) as needed:
        asyncio.run(changed.ask(asked))
    assert list(needed.value.requests) == ["k"]


def test_default_keys_are_the_same_on_every_run_and_a_context_without_interaction_cannot_ask() -> None:
    interaction = RoundInteraction({}, {}, None, 1)
    keys = []
    for _ in range(2):  # two runs of the same tool: same keys
        ctx = ToolContext(principal="p", services=make_services(), interaction=interaction)
        with pytest.raises(InputRequired) as needed:
            asyncio.run(ctx.elicit("Name?", NAME))
        keys.append(list(needed.value.requests))
    assert keys == [["elicit-1"], ["elicit-1"]]
    with pytest.raises(JsonRpcError) as refused:
        asyncio.run(ToolContext(principal="p", services=make_services()).list_roots())
    assert refused.value.code == INVALID_REQUEST
