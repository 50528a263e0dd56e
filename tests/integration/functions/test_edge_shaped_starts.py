"""E1: the endpoint started as Lambda starts it (run.sh, the template's environment) for each edge,
behind a local stand-in of the edge's request shape: each request carries the headers the edge and
the Web Adapter put on it (CloudFront's to a Function URL origin: ``Via``, ``X-Amz-Cf-Id``,
``CloudFront-*`` viewer headers, the origin-verify header; API Gateway's REST proxy event as the
adapter turns it into a request: the execute-api Host, ``X-Forwarded-*``, ``X-Amzn-Trace-Id``,
``x-amzn-request-context`` with the stage, the path without it).

What a stand-in cannot show: that the real CloudFront and API Gateway send exactly these (the
shapes are from their documentation), and the streaming through them (the Web Adapter's framing
is the same one for both, read by each service)."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.config import EnvVars
from mcp_platform.protocol.jsonrpc import INVALID_REQUEST
from mcp_platform.transport.origin_verify import ORIGIN_VERIFY_HEADER
from tests.support.aws import free_port
from tests.support.deployment import REGION, Deployment, deployed
from tests.support.lambda_runtime import WebFunction, started_web_function
from tests.support.mcp_http import ACCEPT_BOTH, sse_messages

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("lambda_shaped")]

FUNCTION_URL_HOST = f"abcdefghijklmnopqrstuvwxyz012345.lambda-url.{REGION}.on.aws"
EXECUTE_API_HOST = f"a1b2c3d4e5.execute-api.{REGION}.amazonaws.com"
VIEWER_IP = "203.0.113.7"


def lambda_context() -> str:
    return json.dumps({"request_id": str(uuid.uuid4()), "deadline": 0, "invoked_function_arn": "arn", "env_config": {}})


def cloudfront_to_function_url(verify: str | None) -> dict[str, str]:
    """A viewer's request as the distribution forwards it to the Function URL (AllViewerExceptHostHeader,
    the origin custom header), as the Function URL and the Web Adapter hand it to the app."""
    headers = {
        "host": FUNCTION_URL_HOST,
        "via": "2.0 0123456789abcdef0123456789abcdef.cloudfront.net (CloudFront)",
        "x-amz-cf-id": "q5Qb3Zk1m0W8Xc1hZ7RZ9hTMuNqTnS3ol6N5Wd1i0Xc2J6cEtvPslA==",
        "x-forwarded-for": VIEWER_IP,
        "cloudfront-viewer-address": f"{VIEWER_IP}:50123",
        "cloudfront-forwarded-proto": "https",
        "cloudfront-viewer-country": "DE",
        "user-agent": "mcp-client/1.0",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "x-forwarded-proto": "https",
        "x-forwarded-port": "443",
        "x-amzn-trace-id": "Root=1-6760a0c2-1234567890abcdef12345678",
        "x-amzn-request-context": json.dumps(
            {"accountId": "anonymous", "domainName": FUNCTION_URL_HOST, "http": {"sourceIp": "130.176.0.1"}}
        ),
        "x-amzn-lambda-context": lambda_context(),
    }
    if verify is not None:
        headers[ORIGIN_VERIFY_HEADER] = verify
    return headers


def api_gateway_rest_proxy(stage: str) -> dict[str, str]:
    """A request as API Gateway's REST proxy event carries it and the Web Adapter hands it on."""
    return {
        "host": EXECUTE_API_HOST,
        "x-forwarded-for": VIEWER_IP,
        "x-forwarded-proto": "https",
        "x-forwarded-port": "443",
        "x-amzn-trace-id": "Root=1-6760a0c2-abcdef1234567890abcdef12",
        "user-agent": "mcp-client/1.0",
        "x-amzn-request-context": json.dumps(
            {
                "stage": stage,
                "path": f"/{stage}/mcp",
                "resourcePath": "/{proxy+}",
                "domainName": EXECUTE_API_HOST,
                "identity": {"sourceIp": VIEWER_IP},
            }
        ),
        "x-amzn-lambda-context": lambda_context(),
    }


def initialize(url: str, key: str, edge: dict[str, str]) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
    }
    return httpx.post(url, headers={**edge, **mcp_headers(key)}, json=body, timeout=30)


def mcp_headers(key: str, **extra: str) -> dict[str, str]:
    return {"content-type": "application/json", "accept": ACCEPT_BOTH, "authorization": f"Bearer {key}", **extra}


def streamed_countdown(url: str, key: str, session: str, edge: dict[str, str]) -> list[dict[str, Any]]:
    params = {"name": "countdown", "arguments": {"steps": 2, "interval_ms": 10}, "_meta": {"progressToken": "p"}}
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
    headers = {**edge, **mcp_headers(key, **{"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})}
    response = httpx.post(url, headers=headers, json=body, timeout=30)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    return sse_messages(response)


Started = tuple[Deployment, WebFunction, str]


@contextlib.contextmanager
def started_behind(edge: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Started]:
    """The platform synthesized for ``edge`` (the CloudFront one in the emulator's region) and its
    endpoint started through run.sh with the template's environment; an API key."""
    context = {"edge": edge, **({"region": REGION} if edge == "cloudfront" else {})}
    with deployed(tmp_path_factory, **context) as deployment:
        function = deployment.function("run.sh")
        key = ApiKeyStore(function.environment[EnvVars.SESSION_TABLE], deployment.clients.dynamodb).mint("edge")
        ready = function.environment["AWS_LWA_READINESS_CHECK_PATH"]
        with started_web_function(function, port=free_port(), ready_path=ready) as web:
            yield deployment, web, key


@pytest.fixture(scope="module")
def behind_cloudfront(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Started]:
    with started_behind("cloudfront", tmp_path_factory) as started:
        yield started


@pytest.fixture(scope="module")
def behind_api_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Started]:
    with started_behind("api_gateway", tmp_path_factory) as started:
        yield started


def origin_verify_value(deployment: Deployment, web: WebFunction) -> str:
    """The value the distribution would send: the secret's, as CloudFormation generated it."""
    secret = deployment.clients.secretsmanager.get_secret_value(
        SecretId=web.function.environment[EnvVars.ORIGIN_VERIFY_SECRET]
    )
    value: str = json.loads(secret["SecretString"])["k1"]
    return value


@pytest.mark.parametrize("edge", ["cloudfront", "api_gateway"])
def test_the_endpoint_serves_a_streamed_call_in_the_edges_request_shape(
    edge: str, request: pytest.FixtureRequest
) -> None:
    deployment, web, key = request.getfixturevalue(f"behind_{edge}")
    url = web.base_url + "/mcp"
    shape = (
        cloudfront_to_function_url(origin_verify_value(deployment, web))
        if edge == "cloudfront"
        else api_gateway_rest_proxy(web.function.environment[EnvVars.STAGE])
    )
    # When a 2025 client opens a session through the edge
    opened = initialize(url, key, shape)
    assert opened.status_code == 200, opened.text
    # Then a streamed tool call comes back as SSE, progress before the result
    messages = streamed_countdown(url, key, opened.headers["mcp-session-id"], shape)
    assert [m.get("method") for m in messages].count("notifications/progress") >= 2
    assert "result" in messages[-1] and not messages[-1]["result"].get("isError"), messages[-1]


def test_behind_cloudfront_a_direct_call_without_the_header_is_refused(behind_cloudfront: Started) -> None:
    deployment, web, key = behind_cloudfront
    url = web.base_url + "/mcp"
    # When a caller who found the Function URL calls it directly (its shape without CloudFront's header)
    direct = initialize(url, key, cloudfront_to_function_url(None))
    # Or with a guessed value
    guessed = initialize(url, key, cloudfront_to_function_url("x" * 64))
    # Then both are refused with 403 and a JSON-RPC error, the key notwithstanding
    for response in (direct, guessed):
        assert response.status_code == 403, response.text
        assert response.json()["error"]["code"] == INVALID_REQUEST
    # While the same request through the distribution is served
    assert initialize(url, key, cloudfront_to_function_url(origin_verify_value(deployment, web))).status_code == 200


def test_behind_api_gateway_there_is_no_function_url_and_no_header_to_carry(behind_api_gateway: Started) -> None:
    deployment, web, key = behind_api_gateway
    # Given API Gateway's deployment: nothing to call but the API, so no origin-verify check
    assert not [r for r in deployment.template["Resources"].values() if r["Type"] == "AWS::Lambda::Url"]
    assert EnvVars.ORIGIN_VERIFY_SECRET not in web.function.environment
    # Then its requests are served without the header
    shape = api_gateway_rest_proxy(web.function.environment[EnvVars.STAGE])
    assert ORIGIN_VERIFY_HEADER not in shape
    assert initialize(web.base_url + "/mcp", key, shape).status_code == 200
    # And a path with the stage in it (were the adapter to prefix it) is no MCP endpoint: 404
    staged = httpx.post(web.base_url + "/dev/mcp", headers={**shape, **mcp_headers(key)}, json={}, timeout=30)
    assert staged.status_code == 404
