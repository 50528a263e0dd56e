"""G3 through the facade: the user's tenant is the upstream's claim named by the deployment's
tenant claim, refused when missing, kept with the code and the refresh grant, and carried by
every access token of the sign-in under the same claim name."""

from __future__ import annotations

from typing import Any

import jwt
import pytest

from mcp_platform.application.auth.tenants import TENANT_SYNTAX
from mcp_platform.authorization_server.errors import OAuthError
from mcp_platform.authorization_server.service import AuthorizationServer
from tests.support.facade import Pkce
from tests.unit.authorization_server.conftest import SITE, Facade, query_of

CLAIM = "custom:tenant"  # Cognito's spelling of a custom user attribute in the ID token


def claims_of(tokens: dict[str, Any]) -> dict[str, Any]:
    decoded: dict[str, Any] = jwt.decode(tokens["access_token"], options={"verify_signature": False})
    return decoded


@pytest.mark.parametrize("tenant_claim", [CLAIM])
def test_the_upstream_tenant_rides_with_the_code_and_every_refresh(facade: Facade) -> None:
    # Given a user the upstream names in tenant acme
    facade.upstream.claims = {CLAIM: "acme", "email": "a@example.com"}
    client, pkce = facade.public_client(), Pkce()
    # When the user signs in and the client redeems the code, then refreshes twice
    first = facade.redeem(client, facade.code(client, pkce), pkce)
    second = facade.refresh(client, first["refresh_token"])
    third = facade.refresh(client, second["refresh_token"], scope="mcp:tools")
    # Then every access token carries the tenant under the same claim name (and nothing else of the ID token)
    for tokens in (first, second, third):
        claims = claims_of(tokens)
        assert claims[CLAIM] == "acme" and claims["sub"] == "alice" and "email" not in claims


@pytest.mark.parametrize("tenant_claim", [CLAIM])
@pytest.mark.parametrize(
    "claims",
    [{}, {CLAIM: ""}, {CLAIM: "two words"}, {CLAIM: 7}, {CLAIM: ["acme"]}, {CLAIM: "t" * 65}, {"tenant": "acme"}],
    ids=["absent", "empty", "space", "number", "list", "too long", "another claim"],
)
def test_a_sign_in_the_upstream_names_no_valid_tenant_for_is_access_denied(
    facade: Facade, claims: dict[str, Any]
) -> None:
    facade.upstream.claims = claims
    client, pkce = facade.public_client(), Pkce()
    consent = facade.consent(client, pkce)
    facade.server.decide(SITE, consent.pending.request_id, consent.browser_secret, True)
    # When the upstream's callback arrives for a user without a tenant
    back = facade.server.complete(SITE, {"state": consent.pending.request_id, "code": "up"}, consent.browser_secret)
    # Then the client is told access_denied, naming the claim and the rule; no code is issued
    answer = query_of(back.url)
    assert answer["error"] == "access_denied" and "code" not in answer
    assert CLAIM in answer["error_description"] and TENANT_SYNTAX in answer["error_description"]
    assert answer["state"] == "st" and answer["iss"] == SITE.issuer


@pytest.mark.parametrize("machines", [True])
@pytest.mark.parametrize("tenant_claim", [CLAIM])
def test_a_machine_client_gets_its_tenant_from_its_upstream_access_token_or_is_refused(facade: Facade) -> None:
    form = {"grant_type": "client_credentials", "client_id": "robot", "client_secret": "machine-secret"}
    facade.upstream.claims = {CLAIM: "globex"}
    assert claims_of(facade.server.token(SITE, form, frozenset(), None))[CLAIM] == "globex"
    facade.upstream.claims = {}
    with pytest.raises(OAuthError) as refused:
        facade.server.token(SITE, form, frozenset(), None)
    assert refused.value.error == "unauthorized_client" and CLAIM in refused.value.description


def test_without_tenants_an_upstream_tenant_claim_is_ignored_and_nothing_is_stored_for_it(facade: Facade) -> None:
    facade.upstream.claims = {CLAIM: "acme"}
    client, pkce = facade.public_client(), Pkce()
    code = facade.code(client, pkce)
    assert facade.store.code(code).tenant is None  # type: ignore[union-attr]
    first = facade.redeem(client, code, pkce)
    assert CLAIM not in claims_of(first)
    grant = facade.store.refresh(first["refresh_token"])
    assert grant is not None and grant.tenant is None


def test_a_grant_stored_without_a_tenant_stays_readable_and_asks_for_a_new_sign_in_once_tenants_are_on(
    facade: Facade,
) -> None:
    # Given a refresh token and a code issued before the deployment named a tenant claim
    client, pkce, later = facade.public_client(), Pkce(), Pkce()
    refresh_token = facade.redeem(client, facade.code(client, pkce), pkce)["refresh_token"]
    code = facade.code(client, later)
    # When the facade (on any instance) now has tenants
    server = facade.server
    tenants = AuthorizationServer(
        facade.store,
        server.documents,
        server.upstream,
        server.keys,
        server.settings,
        facade.clock,
        tenant_claim=CLAIM,
    )
    # Then both read as a sign-in without a tenant, and give no token without one: sign in again
    grant = facade.store.refresh(refresh_token)
    assert grant is not None and grant.tenant is None and not grant.used
    form = {"grant_type": "refresh_token", "client_id": client, "refresh_token": refresh_token}
    with pytest.raises(OAuthError) as refused:
        tenants.token(SITE, form, frozenset(), None)
    assert refused.value.error == "invalid_grant" and "sign in again" in refused.value.description
    redeem = {
        "grant_type": "authorization_code",
        "client_id": client,
        "code": code,
        "code_verifier": later.verifier,
        "redirect_uri": "https://client.example/callback",
    }
    with pytest.raises(OAuthError) as old_code:
        tenants.token(SITE, redeem, frozenset(), None)
    assert old_code.value.error == "invalid_grant" and "sign in again" in old_code.value.description
    # and the refusal spent nothing: the facade without tenants still honours the same refresh token
    assert facade.refresh(client, refresh_token)["access_token"]
