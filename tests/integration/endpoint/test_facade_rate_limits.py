"""G1 at the OAuth facade: registrations and token requests are counted across the instances
behind one origin, and a full window is answered 429 with Retry-After and an OAuth error body
(nothing registered, no token looked at)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from local.oauth_issuer import LocalIssuer, running_issuer
from tests.support.endpoint import AwsStack, fresh_stack
from tests.support.facade import (
    REDIRECT_URI,
    UPSTREAM_CLIENT_ID,
    Origin,
    facade_env,
    facade_origin,
    facade_secrets,
    register,
)
from tests.support.governance import create_limits_table

pytestmark = pytest.mark.integration

aws = pytest.fixture(fresh_stack, name="aws")
UPSTREAM_SECRET = uuid.uuid4().hex


@pytest.fixture
def origin(aws: AwsStack) -> Iterator[Origin]:
    limits = f"limits-{uuid.uuid4().hex[:8]}"
    create_limits_table(aws.client("dynamodb"), limits)
    keys_arn, upstream_arn = facade_secrets(aws, UPSTREAM_SECRET)
    issuer: LocalIssuer
    with running_issuer(clients={UPSTREAM_CLIENT_ID: UPSTREAM_SECRET}) as issuer:
        env = facade_env(
            issuer,
            keys_arn,
            upstream_arn,
            MCP_RATE_LIMITS='{"register": "3/hour", "token": "2/hour"}',
            LIMITS_TABLE_NAME=limits,
        )
        with facade_origin(aws, env, count=3) as running:
            yield running


def test_registrations_are_limited_across_instances_and_refused_as_oauth_errors(origin: Origin) -> None:
    """Given register: 3/hour behind a round-robin over three instances, when six clients
    register, then three are registered and three refused 429 too_many_requests with
    Retry-After: no client id is issued to them."""
    answers = [
        httpx.post(f"{origin.base}/register", json={"client_name": f"c{n}", "redirect_uris": [REDIRECT_URI]})
        for n in range(6)
    ]
    assert [a.status_code for a in answers].count(201) == 3, [a.status_code for a in answers]
    for refused in [a for a in answers if a.status_code == 429]:
        body = refused.json()
        assert body["error"] == "too_many_requests" and "register: 3/hour" in body["error_description"]
        assert 1 <= int(refused.headers["retry-after"]) <= 3600 and "client_id" not in body
        assert refused.headers["access-control-allow-origin"] == "*"


def test_token_requests_are_limited_per_client(origin: Origin) -> None:
    """Given token: 2/hour, when one client sends three token requests (without its secret: refused
    by the server, but counted), then the third is 429; another client has its own window."""
    first, second = register(origin.base)["client_id"], register(origin.base)["client_id"]

    def token(client_id: str) -> httpx.Response:
        form = {
            "grant_type": "authorization_code",
            "code": "nope",
            "client_id": client_id,
            "redirect_uri": REDIRECT_URI,
            "code_verifier": "x" * 43,
        }
        return httpx.post(f"{origin.base}/token", data=form)

    assert [token(first).status_code for _ in range(3)] == [401, 401, 429]
    assert token(second).status_code == 401


def test_each_facade_refusal_is_counted_per_rule(origin: Origin) -> None:
    """Given register: 3/hour, when a fourth client registers, then its refusal is one EMF count
    of mcp.server.governance.refused for the rule ``register`` (the dashboard's graph), on the
    instance that refused it."""
    import io
    import json

    from mcp_platform.application.metrics import GOVERNANCE_REFUSALS, GOVERNANCE_RULE, MetricsWriter

    streams = []
    for instance in origin.instances:
        stream = io.StringIO()
        streams.append(stream)
        instance.endpoint.facade.app().metrics = MetricsWriter("McpPlatform", "mcp-endpoint", stream)
    statuses = [
        httpx.post(
            f"{origin.base}/register", json={"client_name": f"c{n}", "redirect_uris": [REDIRECT_URI]}
        ).status_code
        for n in range(4)
    ]
    assert statuses == [201, 201, 201, 429]
    lines = [json.loads(line) for stream in streams for line in stream.getvalue().splitlines()]
    counted = [(line[GOVERNANCE_REFUSALS], line[GOVERNANCE_RULE]) for line in lines if GOVERNANCE_REFUSALS in line]
    assert counted == [(1, "register")]
