"""OAuth token validation against a loopback issuer: what is accepted, and every way a token is refused."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from local.oauth_issuer import LocalIssuer, running_issuer
from mcp_platform.adapters.jwks import IssuerUnavailable, JwksCache, urllib_fetch
from mcp_platform.application.auth.base import AuthError, InsufficientScope, Principal
from mcp_platform.application.auth.oauth import OAuthAuthenticator
from mcp_platform.application.auth.resource import ProtectedResource
from mcp_platform.config import OAuthSettings
from tests.support.oauth import b64url, claims_for, hs256_with_public_key, unsigned

AUDIENCE = "http://127.0.0.1:8000/mcp"
HOST = {"host": "127.0.0.1:8000"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def issuer() -> Iterator[LocalIssuer]:
    with running_issuer() as running:
        yield running


def authenticator(
    issuer: LocalIssuer, clock: Clock | None = None, **settings: Any
) -> tuple[OAuthAuthenticator, JwksCache]:
    oauth = OAuthSettings(issuer=issuer.issuer, **settings)
    keys = JwksCache(issuer.issuer, urllib_fetch(), monotonic=clock or Clock(), min_refetch_seconds=30)
    resource = ProtectedResource.from_settings(oauth, "us-east-1")
    return OAuthAuthenticator(oauth, resource, keys), keys


def authenticate(auth: OAuthAuthenticator, token: str | None, headers: dict[str, str] = HOST) -> Principal:
    sent = {**headers, **({"authorization": f"Bearer {token}"} if token is not None else {})}
    return asyncio.run(auth.authenticate(sent, "127.0.0.1"))


def test_a_tokens_groups_claim_names_the_principals_groups(issuer: LocalIssuer) -> None:
    # Given tokens naming groups as Cognito does, as the common claim does, and none at all
    auth, _ = authenticator(issuer)
    cognito = authenticate(auth, issuer.mint("ann", AUDIENCE, claims={"cognito:groups": ["admins", "support"]}))
    common = authenticate(auth, issuer.mint("ben", AUDIENCE, claims={"groups": "finance"}))
    plain = authenticate(auth, issuer.mint("cat", AUDIENCE))
    # Then each principal carries exactly the groups its token names
    assert cognito.groups == frozenset({"admins", "support"})
    assert common.groups == frozenset({"finance"})
    assert plain.groups == frozenset()


def test_valid_token_names_an_issuer_qualified_principal_with_its_scopes(issuer: LocalIssuer) -> None:
    auth, _ = authenticator(issuer, scopes=("mcp:tools",))
    principal = authenticate(auth, issuer.mint("alice", AUDIENCE, ["mcp:tools", "notes:write"]))
    assert principal.id == f"oauth:{issuer.issuer}#alice"
    assert principal.kind == "oauth"
    assert principal.scopes == frozenset({"mcp:tools", "notes:write"})


def test_scp_claim_as_list_or_string_counts_as_scopes(issuer: LocalIssuer) -> None:
    auth, _ = authenticator(issuer, scopes=("a",))
    as_list = issuer.mint("bob", AUDIENCE, claims={"scp": ["a", "b"]})
    as_string = issuer.mint("bob", [AUDIENCE, "https://other.example/mcp"], claims={"scp": "a c"})
    assert authenticate(auth, as_list).scopes == frozenset({"a", "b"})
    assert authenticate(auth, as_string).scopes == frozenset({"a", "c"})  # aud as a list naming us


BAD_TOKENS = {
    "expired": lambda i: i.mint("eve", AUDIENCE, expires_in=-120),  # beyond the 30 s leeway
    "not yet valid": lambda i: i.mint("eve", AUDIENCE, not_before=time.time() + 300),
    "wrong audience": lambda i: i.mint("eve", "http://127.0.0.1:9999/mcp"),
    "no audience": lambda i: i.mint("eve", None),
    "wrong issuer": lambda i: i.mint("eve", AUDIENCE, issuer="https://evil.example"),
    "unknown key": lambda i: i.mint("eve", AUDIENCE, kid=i.add_key(publish=False)),
    "alg none": lambda i: unsigned(claims_for(i.issuer, AUDIENCE), i.current_kid),
    "hs256 with the public key": lambda i: hs256_with_public_key(
        claims_for(i.issuer, AUDIENCE), i.current_kid, i.public_pem()
    ),
    "malformed": lambda i: "not-a-jwt",
    "garbage segments": lambda i: "eyJ.e30.sig",
    "tampered payload": lambda i: _tampered(i.mint("eve", AUDIENCE)),
    "no subject": lambda i: i.mint("", AUDIENCE),
    "subject too long": lambda i: i.mint("x" * 256, AUDIENCE),
}


def _tampered(token: str) -> str:
    """The signature of one token over another payload (a changed subject)."""
    header, _, signature = token.split(".")
    payload = b64url(json.dumps(claims_for("any", AUDIENCE, "admin")).encode())
    return f"{header}.{payload}.{signature}"


@pytest.mark.parametrize("kind", sorted(BAD_TOKENS))
def test_every_bad_token_is_refused_401_with_the_discovery_challenge(issuer: LocalIssuer, kind: str) -> None:
    auth, _ = authenticator(issuer, scopes=("mcp:tools",))
    with pytest.raises(AuthError) as refused:
        authenticate(auth, BAD_TOKENS[kind](issuer))
    assert refused.value.status == 401 and not isinstance(refused.value, InsufficientScope)
    challenge = refused.value.www_authenticate
    assert 'resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"' in challenge
    assert 'scope="mcp:tools"' in challenge and 'error="invalid_token"' in challenge


def test_no_token_gets_the_challenge_without_an_error_code(issuer: LocalIssuer) -> None:
    auth, _ = authenticator(issuer)
    with pytest.raises(AuthError) as refused:
        authenticate(auth, None)
    assert refused.value.status == 401
    assert refused.value.www_authenticate == (
        'Bearer resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"'
    )


def test_token_without_a_required_scope_is_403_insufficient_scope(issuer: LocalIssuer) -> None:
    auth, _ = authenticator(issuer, scopes=("mcp:tools", "mcp:admin"))
    with pytest.raises(InsufficientScope) as refused:
        authenticate(auth, issuer.mint("carol", AUDIENCE, ["mcp:tools"]))
    assert refused.value.status == 403 and refused.value.missing == ("mcp:admin",)
    assert 'error="insufficient_scope"' in refused.value.www_authenticate
    assert 'scope="mcp:tools mcp:admin"' in refused.value.www_authenticate


def test_algorithm_that_does_not_fit_the_key_is_refused(issuer: LocalIssuer) -> None:
    import jwt

    auth, _ = authenticator(issuer)
    # The published JWK says RS256; a PS256 signature by the same RSA key must not pass.
    key = issuer._keys[issuer.current_kid]
    token = jwt.encode(claims_for(issuer.issuer, AUDIENCE), key, algorithm="PS256", headers={"kid": issuer.current_kid})
    with pytest.raises(AuthError, match="does not match its key"):
        authenticate(auth, token)


def test_a_key_added_to_the_jwks_later_is_accepted(issuer: LocalIssuer) -> None:
    clock = Clock()
    auth, keys = authenticator(issuer, clock)
    assert authenticate(auth, issuer.mint("dave", AUDIENCE)).id.endswith("#dave")
    rotated = issuer.add_key(publish=False)
    clock.now += 30
    with pytest.raises(AuthError, match="Unknown signing key"):  # refetched: not published yet
        authenticate(auth, issuer.mint("dave", AUDIENCE, kid=rotated))
    # The issuer publishes its new key; once the refetch interval has passed it is picked up.
    issuer.publish(rotated)
    clock.now += 30
    assert authenticate(auth, issuer.mint("dave", AUDIENCE, kid=rotated)).id.endswith("#dave")
    assert keys.fetches == 3  # first use, the refused unknown kid, the rotation


def test_unknown_kid_flood_costs_the_issuer_one_fetch_per_interval(issuer: LocalIssuer) -> None:
    clock = Clock()
    auth, keys = authenticator(issuer, clock)
    authenticate(auth, issuer.mint("erin", AUDIENCE))
    before = issuer.jwks_requests
    stranger = issuer.add_key(publish=False)
    clock.now += 30  # the keys were just fetched: a refetch is allowed again only from here
    for _ in range(50):
        with pytest.raises(AuthError, match="Unknown signing key"):
            authenticate(auth, issuer.mint("erin", AUDIENCE, kid=stranger))
    assert issuer.jwks_requests - before == 1
    clock.now += 30
    with pytest.raises(AuthError):
        authenticate(auth, issuer.mint("erin", AUDIENCE, kid=stranger))
    assert issuer.jwks_requests - before == 2 and keys.fetches == 3


def test_cognito_style_token_without_aud_is_bound_by_client_id(issuer: LocalIssuer) -> None:
    auth, _ = authenticator(issuer, client_ids=("app-client-1",))
    access = issuer.mint("frank", None, claims={"client_id": "app-client-1", "token_use": "access"})
    assert authenticate(auth, access).id.endswith("#frank")
    for claims in (
        {"client_id": "someone-else", "token_use": "access"},
        {"client_id": "app-client-1", "token_use": "id"},
    ):
        with pytest.raises(AuthError, match="no audience"):
            authenticate(auth, issuer.mint("frank", None, claims=claims))


def test_unknown_host_without_configured_audience_is_misdirected(issuer: LocalIssuer) -> None:
    auth, _ = authenticator(issuer)
    with pytest.raises(AuthError) as refused:
        authenticate(auth, issuer.mint("gina", AUDIENCE), {"host": "evil.example"})
    assert refused.value.status == 421


def test_configured_audience_is_the_only_one_accepted(issuer: LocalIssuer) -> None:
    auth, _ = authenticator(issuer, audience="https://mcp.example.com/mcp")
    assert authenticate(auth, issuer.mint("hal", "https://mcp.example.com/mcp"), {"host": "anything"}).id
    with pytest.raises(AuthError, match="another audience"):
        authenticate(auth, issuer.mint("hal", AUDIENCE))


def test_issuer_down_before_any_key_is_known_is_unavailable_not_unauthorized() -> None:
    issuer = LocalIssuer().start()
    auth, _ = authenticator(issuer)
    token = issuer.mint("ivy", AUDIENCE)
    issuer.stop()
    with pytest.raises(IssuerUnavailable):
        authenticate(auth, token)


def test_keys_stay_usable_for_a_grace_period_when_a_refresh_fails() -> None:
    clock = Clock()
    issuer = LocalIssuer().start()
    auth, keys = authenticator(issuer, clock)
    token = issuer.mint("jo", AUDIENCE)
    authenticate(auth, token)
    issuer.stop()
    clock.now += keys.ttl_seconds + 1  # expired: refresh fails, the last good set still serves
    assert authenticate(auth, token).id.endswith("#jo")
    clock.now += 2 * 3600  # past the grace period: refused as unavailable
    with pytest.raises(IssuerUnavailable):
        authenticate(auth, token)


def test_the_configured_tenant_claim_names_the_callers_tenant_and_its_absence_is_refused(issuer: LocalIssuer) -> None:
    """G3: with ``tenant_claim``, the claim's value is the caller's tenant (its owner tenant-
    qualified); a token without it, or with a value that is no tenant name, is refused 401
    ``invalid_token``, never served as a caller without a tenant. Without the setting the claim is
    ignored."""
    auth, _ = authenticator(issuer, tenant_claim="tenant_id")
    principal = authenticate(auth, issuer.mint("alice", AUDIENCE, claims={"tenant_id": "acme"}))
    assert (principal.tenant, principal.owner) == ("acme", f"tenant:acme/oauth:{issuer.issuer}#alice")
    for claims in ({}, {"tenant_id": ""}, {"tenant_id": "a/b"}, {"tenant_id": ["acme"]}):
        with pytest.raises(AuthError) as refused:
            authenticate(auth, issuer.mint("alice", AUDIENCE, claims=claims))
        assert refused.value.status == 401 and "'tenant_id' claim names no tenant" in str(refused.value)
        assert 'error="invalid_token"' in (refused.value.www_authenticate or "")
    untenanted, _ = authenticator(issuer)
    plain = authenticate(untenanted, issuer.mint("alice", AUDIENCE, claims={"tenant_id": "acme"}))
    assert (plain.tenant, plain.owner) == (None, f"oauth:{issuer.issuer}#alice")
