"""AWS failures that outlive the SDK's retries leave the adapters as the store's typed error and
reach the caller as the retryable -31004 (HTTP 503 + Retry-After in 2026), never as -32603:
-32603 stays for the platform's own bugs. DynamoDB's 500s and unreachable endpoints are injected
with botocore hooks (moto never fails that way)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from mcp_platform.protocol.jsonrpc import UNAVAILABLE
from tests.support.endpoint import AwsStack, Instance, alice_and_bob, endpoint_instance, fresh_stack
from tests.support.mcp_http import CAPS_META, final_message, modern_call

pytestmark = pytest.mark.integration

aws = pytest.fixture(fresh_stack, name="aws")
keys = pytest.fixture(alice_and_bob, name="keys")


class Outage:
    """Fails every call of ``operations`` on one client while ``on``: a DynamoDB 500, or no
    connection at all."""

    def __init__(self, client: Any, operations: tuple[str, ...], error: Exception) -> None:
        self.on = False
        self.error = error
        for operation in operations:
            client.meta.events.register(f"before-call.dynamodb.{operation}", self)

    def __call__(self, **_: Any) -> None:
        if self.on:
            raise self.error


SERVER_ERROR = ClientError(
    {"Error": {"Code": "InternalServerError", "Message": "injected"}, "ResponseMetadata": {"HTTPStatusCode": 500}},
    "BatchGetItem",
)
UNREACHABLE = EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")


@pytest.fixture(params=[SERVER_ERROR, UNREACHABLE], ids=["500", "unreachable"])
def failing(aws: AwsStack, request: pytest.FixtureRequest) -> Iterator[tuple[Instance, Outage]]:
    client = aws.client("dynamodb")
    outage = Outage(client, ("BatchGetItem", "TransactWriteItems", "GetItem"), request.param)
    with endpoint_instance(aws, dynamodb=client) as instance:
        yield instance, outage


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "_meta": CAPS_META}


def test_a_store_outage_answers_the_retryable_error_not_an_internal_error(
    failing: tuple[Instance, Outage], keys: dict[str, str]
) -> None:
    """Given a session, when DynamoDB fails every read and write, then a read-modify-write call
    is answered 503 + Retry-After with -31004 (retryable) and nothing else; once DynamoDB is back
    the same call runs."""
    instance, outage = failing
    opened = final_message(modern_call(instance.url, keys["alice"], 1, "tools/call", tool("open_session")))
    handle = opened["result"]["structuredContent"]["session"]
    outage.on = True
    answer = modern_call(instance.url, keys["alice"], 2, "tools/call", tool("increment_counter", session=handle))
    error = final_message(answer)["error"]
    assert error["code"] == UNAVAILABLE and error["data"]["retryable"] is True, error
    assert answer.status_code == 503 and answer.headers["retry-after"] == str(error["data"]["retryAfterSeconds"])
    outage.on = False
    again = modern_call(instance.url, keys["alice"], 3, "tools/call", tool("increment_counter", session=handle))
    assert "result" in final_message(again)
