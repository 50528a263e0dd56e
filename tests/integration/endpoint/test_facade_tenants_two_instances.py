"""G3 through the OAuth facade, over HTTP: two endpoint instances behind one round-robin origin,
the development issuer upstream asking the user for a tenant (``custom:tenant`` in its ID token,
as a Cognito custom attribute), ``MCP_OAUTH_TENANT_CLAIM=custom:tenant``.

The same upstream user signed in as tenant acme and as tenant globex is two owners: acme's
session handle is a stranger's (-31001) to globex's sign-in, on either instance; a refreshed
token stays in acme; a token straight from the issuer with the same claim is the same owner;
the calls' events name the tenant-qualified owner; a sign-in without a tenant is refused. The
control runs the scenario with the facade's tokens read without their tenant (the principal
built as before tenants) and shows the leak the assertions catch.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from local.oauth_browser import ScriptedBrowser
from local.oauth_issuer import DEV_USER, LocalIssuer, running_issuer
from mcp_platform.application.auth.base import OAUTH_PRINCIPAL_PREFIX
from mcp_platform.authorization_server import tokens
from tests.support.endpoint import AwsStack, fresh_stack
from tests.support.facade import (
    REDIRECT_URI,
    SCOPE,
    UPSTREAM_CLIENT_ID,
    Origin,
    Pkce,
    authorize_url,
    facade_env,
    facade_origin,
    facade_secrets,
    query_of,
    redeem,
    register,
)
from tests.support.kinesis import read_whole_stream
from tests.support.mcp_http import CAPS_META, final_message, modern_call

pytestmark = pytest.mark.integration

aws = pytest.fixture(fresh_stack, name="aws", scope="module")
CLAIM = "custom:tenant"
UPSTREAM_SECRET = secrets.token_urlsafe(24)
STRANGERS_SESSION = -31001


@pytest.fixture(scope="module")
def issuer() -> Iterator[LocalIssuer]:
    with running_issuer(clients={UPSTREAM_CLIENT_ID: UPSTREAM_SECRET}, tenant_claim=CLAIM) as running:
        yield running


@pytest.fixture(scope="module")
def origin(aws: AwsStack, issuer: LocalIssuer) -> Iterator[Origin]:
    keys_arn, upstream_arn = facade_secrets(aws, UPSTREAM_SECRET)
    env = facade_env(issuer, keys_arn, upstream_arn, MCP_OAUTH_TENANT_CLAIM=CLAIM)
    with facade_origin(aws, env) as running:
        yield running


@pytest.fixture
def naive_facade_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    """The facade's tokens read as before tenants: no tenant however the token names one (the control)."""
    monkeypatch.setattr(tokens, "token_tenant", lambda claims, claim: None)


def signed_in(origin: Origin, tenant: str) -> dict[str, Any]:
    """A public client's tokens for the development user, signed in with ``tenant`` typed in."""
    client = register(
        origin.base, token_endpoint_auth_method="none", grant_types=["authorization_code", "refresh_token"]
    )
    pkce = Pkce()
    landed = ScriptedBrowser().sign_in(
        authorize_url(origin.base, client["client_id"], pkce), REDIRECT_URI, fields={"tenant": tenant}
    )
    answer = query_of(landed)
    assert "code" in answer, answer
    response = redeem(origin.base, client["client_id"], answer["code"], pkce)
    assert response.status_code == 200, response.text
    return {"client_id": client["client_id"], **response.json()}


def tool(origin: Origin, bearer: str, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": CAPS_META}
    return final_message(modern_call(origin.mcp, bearer, request_id, "tools/call", params))


def refreshed(origin: Origin, signed: dict[str, Any]) -> str:
    form = {"grant_type": "refresh_token", "client_id": signed["client_id"], "refresh_token": signed["refresh_token"]}
    response = httpx.post(f"{origin.base}/token", data=form)
    assert response.status_code == 200, response.text
    return str(response.json()["access_token"])


def scenario(origin: Origin, issuer: LocalIssuer) -> dict[str, Any]:
    """acme's user opens a session and writes a note; what each other credential then reads from it."""
    acme, globex = signed_in(origin, "acme"), signed_in(origin, "globex")
    opened = tool(origin, acme["access_token"], 1, "open_session", {})
    assert "result" in opened, opened
    handle = opened["result"]["structuredContent"]["session"]
    assert "result" in tool(origin, acme["access_token"], 2, "append_note", {"session": handle, "text": "acme only"})
    direct = issuer.mint(DEV_USER, origin.mcp, [SCOPE], claims={CLAIM: "acme"})
    return {
        # the round-robin origin puts consecutive calls on alternate instances
        "globex": [tool(origin, globex["access_token"], 3 + i, "read_notes", {"session": handle}) for i in range(2)],
        "refreshed": tool(origin, refreshed(origin, acme), 5, "read_notes", {"session": handle}),
        "direct": tool(origin, direct, 6, "read_notes", {"session": handle}),
    }


def notes(answer: dict[str, Any]) -> list[str]:
    assert "result" in answer, answer
    return [note["text"] for note in answer["result"]["structuredContent"]["notes"]]


def test_g3_the_same_user_signed_in_through_the_facade_in_two_tenants_is_two_owners(
    aws: AwsStack, origin: Origin, issuer: LocalIssuer
) -> None:
    # Given the development user signed in through the facade once as acme, once as globex
    seen = scenario(origin, issuer)
    # Then acme's handle is a stranger's to the globex sign-in, on both instances
    assert [answer["error"]["code"] for answer in seen["globex"]] == [STRANGERS_SESSION] * 2, seen["globex"]
    # And a refreshed acme token, and the issuer's own token naming acme, are the same owner as before
    assert notes(seen["refreshed"]) == ["acme only"]
    assert notes(seen["direct"]) == ["acme only"]
    assert all(count > 0 for count in origin.proxy.counts), origin.proxy.counts
    # And the calls' events name the tenant-qualified owner
    events = [json.loads(record["Data"]) for record in read_whole_stream(aws.client("kinesis"), aws.stream)]
    tenants = {event.get("tenant"): event.get("principal") for event in events if event.get("tool") == "append_note"}
    assert tenants.get("acme") == f"tenant:acme/{OAUTH_PRINCIPAL_PREFIX}{issuer.issuer}#{DEV_USER}", tenants


def test_g3_a_sign_in_without_a_tenant_is_refused_at_the_facade(origin: Origin) -> None:
    client = register(origin.base, token_endpoint_auth_method="none")
    landed = ScriptedBrowser().sign_in(
        authorize_url(origin.base, client["client_id"], Pkce()), REDIRECT_URI, fields={"tenant": ""}
    )
    answer = query_of(landed)
    assert answer["error"] == "access_denied" and CLAIM in answer["error_description"] and "code" not in answer
    assert answer["iss"] == origin.base and answer["state"] == "state-123"


def test_control_facade_tokens_read_without_their_tenant_leak_the_handle(
    origin: Origin, issuer: LocalIssuer, naive_facade_tokens: None
) -> None:
    """The same scenario with the facade's tokens read as before tenants: globex's sign-in reads
    acme's note (and the issuer's own acme token, read with its tenant, becomes a stranger)."""
    seen = scenario(origin, issuer)
    assert [notes(answer) for answer in seen["globex"]] == [["acme only"]] * 2
    assert seen["direct"]["error"]["code"] == STRANGERS_SESSION
