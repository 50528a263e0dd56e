"""The official Python SDK client (2.x) completes elicitations in both protocol eras, through a
round-robin proxy over two instances (every request to the next one, as a Function URL spreads
them): its elicitation callback answers, wherever the answer lands."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import types

from examples import conformance
from local.conformance.proxy import RoundRobinProxy
from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from tests.support.aws import fake_credentials
from tests.support.endpoint import AwsStack, aws_stack, endpoint_instance, sdk_client
from tests.support.servers import serve

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def aws() -> Iterator[AwsStack]:
    with fake_credentials(), aws_stack() as stack:
        yield stack


@pytest.fixture(scope="module")
def proxied(aws: AwsStack) -> Iterator[tuple[str, RoundRobinProxy]]:
    with (
        endpoint_instance(aws, extra_tools=(conformance,)) as a,
        endpoint_instance(aws, extra_tools=(conformance,)) as b,
    ):
        proxy = RoundRobinProxy([a.url.removesuffix("/mcp"), b.url.removesuffix("/mcp")])
        with serve(proxy) as base:
            yield f"{base}/mcp", proxy
        assert a.recorder.validate_all() > 0 and b.recorder.validate_all() > 0


@pytest.fixture(scope="module")
def api_key(aws: AwsStack) -> str:
    return ApiKeyStore(aws.table, aws.client("dynamodb")).mint("alice")


class Answers:
    """An elicitation callback that answers from a table of fields and records the questions."""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content=self.fields)


def call_tool(url: str, key: str, mode: str, callback: Answers, name: str, arguments: dict[str, Any]) -> Any:
    async def body() -> Any:
        async with sdk_client(url, key, mode, elicitation_callback=callback) as client:
            return await client.call_tool(name, arguments)

    return anyio.run(body)


def test_the_sdk_client_completes_a_2025_elicitation_answered_through_either_instance(
    proxied: tuple[str, RoundRobinProxy], api_key: str
) -> None:
    """Given a 2025-11-25 session, when a tool elicits on its stream, then the SDK's response POST
    (sent to the next instance) reaches the call and the result carries the answer."""
    url, proxy = proxied
    answers = Answers(username="sdk-user", email="sdk@example.com")
    result = call_tool(url, api_key, "legacy", answers, "test_elicitation", {"message": "Your details?"})
    assert answers.asked == ["Your details?"]
    assert not result.is_error and "sdk@example.com" in result.content[0].text
    assert all(count > 0 for count in proxy.counts)


def test_the_sdk_client_completes_a_2026_multi_round_elicitation(
    proxied: tuple[str, RoundRobinProxy], api_key: str
) -> None:
    """Given 2026-07-28, when a tool asks twice, then the SDK retries with inputResponses and the
    requestState each time (each retry on the other instance) and gets the complete result."""
    url, _ = proxied
    answers = Answers(name="Ada", color="green")
    result = call_tool(url, api_key, "2026-07-28", answers, "test_input_required_result_multi_round", {})
    assert answers.asked == ["Step 1: What is your name?", "Step 2: What is your favorite color?"]
    assert not result.is_error and result.content[0].text == "Ada likes green."
