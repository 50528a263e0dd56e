"""E1 over HTTP: an endpoint configured for edge=cloudfront refuses, with 403 and a JSON-RPC error,
every request that does not carry one of the origin-verify secret's values (a direct call to the
Function URL), and serves those that do (CloudFront's). Its health check stays open."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator

import httpx
import pytest

from mcp_platform.protocol.jsonrpc import INTERNAL_ERROR, INVALID_REQUEST
from mcp_platform.transport.origin_verify import ORIGIN_VERIFY_HEADER
from tests.support.endpoint import AwsStack, Instance, endpoint_instance
from tests.support.mcp_http import headers

pytestmark = pytest.mark.integration

PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
# The secret's value as CloudFormation generates it (64 letters and digits); fixed, so that every
# xdist worker collects the same parameters.
VALUE = "Zq7" + "x4Kp9" * 12 + "Ab1"


@pytest.fixture(scope="module")
def behind_cloudfront(aws: AwsStack) -> Iterator[Instance]:
    # Given the origin-verify secret as CloudFormation generates it, and an endpoint told its ARN
    created = aws.client("secretsmanager").create_secret(
        Name=f"origin-verify-{secrets.token_hex(4)}", SecretString=json.dumps({"current": "k1", "k1": VALUE})
    )
    with endpoint_instance(aws, MCP_ORIGIN_VERIFY_SECRET_ARN=created["ARN"]) as running:
        yield running


def refused(response: httpx.Response) -> bool:
    body = response.json()
    return response.status_code == 403 and body["error"]["code"] == INVALID_REQUEST and body["id"] is None


@pytest.mark.parametrize(
    "verify",
    [None, "", VALUE[:-1], VALUE + "A", VALUE[:-1] + "2", VALUE.swapcase()],
    ids=["absent", "empty", "truncated", "extended", "last-byte-off", "case-swapped"],
)
def test_a_call_without_the_right_origin_header_is_refused_403(
    behind_cloudfront: Instance, api_key: str, verify: str | None
) -> None:
    # When a valid MCP request with a valid key comes without the header, or with a wrong value
    extra = {} if verify is None else {ORIGIN_VERIFY_HEADER: verify}
    response = httpx.post(behind_cloudfront.url, headers={**headers(api_key), **extra}, json=PING)
    # Then it is refused before anything else is read: 403 with a JSON-RPC error
    assert refused(response), (response.status_code, response.text)


def test_every_path_but_the_health_check_is_refused_without_the_header(behind_cloudfront: Instance) -> None:
    base = behind_cloudfront.url.removesuffix("/mcp")
    for method, path in (("GET", "/mcp"), ("DELETE", "/mcp"), ("OPTIONS", "/mcp"), ("GET", "/.well-known/x")):
        assert refused(httpx.request(method, base + path)), (method, path)
    assert httpx.get(base + "/healthz").json() == {"status": "ok"}  # the Web Adapter's readiness check


def test_a_repeated_header_is_refused_even_with_the_right_value_among_them(
    behind_cloudfront: Instance, api_key: str
) -> None:
    raw = [(k, v) for k, v in headers(api_key).items()] + [(ORIGIN_VERIFY_HEADER, "x"), (ORIGIN_VERIFY_HEADER, VALUE)]
    assert refused(httpx.post(behind_cloudfront.url, headers=raw, json=PING))


def test_with_the_header_the_request_is_served_and_authenticated_as_ever(
    behind_cloudfront: Instance, api_key: str
) -> None:
    through_edge = {ORIGIN_VERIFY_HEADER: VALUE}
    # Given CloudFront's header: a 2025 client's initialize with a key is answered
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    answered = httpx.post(behind_cloudfront.url, headers={**headers(api_key), **through_edge}, json=initialize)
    assert answered.status_code == 200 and answered.headers["mcp-session-id"], answered.text
    # And one without a key still gets the 401 challenge (the header is no credential)
    anonymous = httpx.post(behind_cloudfront.url, headers={**headers(None), **through_edge}, json=PING)
    assert anonymous.status_code == 401 and "www-authenticate" in anonymous.headers


def test_an_unreadable_secret_answers_503_to_retry_never_a_pass(aws: AwsStack, api_key: str) -> None:
    # Given an endpoint whose secret does not exist (deleted, or not granted)
    missing = "arn:aws:secretsmanager:us-east-1:123456789012:secret:origin-verify-gone-AbCdEf"
    with endpoint_instance(aws, MCP_ORIGIN_VERIFY_SECRET_ARN=missing) as running:
        response = httpx.post(running.url, headers={**headers(api_key), ORIGIN_VERIFY_HEADER: VALUE}, json=PING)
    # Then callers are told to retry; nothing is let through unchecked
    assert response.status_code == 503 and response.headers["retry-after"] == "1"
    assert response.json()["error"]["code"] == INTERNAL_ERROR
