"""The facade as the upstream issuer's confidential client, against the development issuer on
loopback: discovery, the sign-in URL, the code redemption, and every answer it must not trust."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from local.oauth_issuer import DEV_USER, LocalIssuer, running_issuer
from mcp_platform.adapters.jwks import urllib_fetch
from mcp_platform.adapters.upstream_idp import UpstreamClient
from mcp_platform.authorization_server.errors import FacadeUnavailable, OAuthError, UpstreamUnavailable

CLIENT_ID, CLIENT_SECRET = "facade", "facade-secret"
CALLBACK = "http://127.0.0.1:8000/callback"
VERIFIER = "v" * 64


class Secrets:
    def __init__(self, value: Any) -> None:
        self.value = value
        self.reads = 0

    def get_secret_value(self, SecretId: str) -> dict[str, str]:  # boto3 names it SecretId
        self.reads += 1
        return {"SecretString": self.value if isinstance(self.value, str) else json.dumps(self.value)}


@pytest.fixture
def issuer() -> Iterator[LocalIssuer]:
    with running_issuer(clients={CLIENT_ID: CLIENT_SECRET}) as running:
        yield running


def client(issuer: LocalIssuer, secret: Any = None, **options: Any) -> UpstreamClient:
    value = secret if secret is not None else {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}
    return UpstreamClient(
        issuer.issuer, secret_id="s", secrets_client=Secrets(value), scopes=("openid",), fetch=urllib_fetch(), **options
    )


def challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def test_a_sign_in_goes_to_the_discovered_endpoint_and_its_code_names_the_user(issuer: LocalIssuer) -> None:
    upstream = client(issuer)
    url = upstream.authorization_url(CALLBACK, "state-1", challenge(VERIFIER))
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert url.startswith(f"{issuer.issuer}/authorize?")
    assert query["client_id"] == CLIENT_ID and query["redirect_uri"] == CALLBACK and query["scope"] == "openid"
    assert query["code_challenge_method"] == "S256" and query["state"] == "state-1"
    code = issuer.issue_code(query)  # what the login page's form post does
    assert upstream.user(code, CALLBACK, VERIFIER).subject == DEV_USER


def test_a_refused_code_asks_for_a_new_sign_in_and_a_wrong_verifier_is_refused_upstream(issuer: LocalIssuer) -> None:
    upstream = client(issuer)
    query = {
        k: v[0]
        for k, v in parse_qs(urlsplit(upstream.authorization_url(CALLBACK, "s", challenge(VERIFIER))).query).items()
    }
    code = issuer.issue_code(query)
    with pytest.raises(ValueError, match="sign-in"):
        upstream.user(code, CALLBACK, "w" * 64)  # the upstream checks PKCE; the code is spent
    with pytest.raises(ValueError):
        upstream.user(code, CALLBACK, VERIFIER)


def test_a_wrong_client_secret_is_a_facade_fault_not_the_users(issuer: LocalIssuer) -> None:
    upstream = client(issuer, {"client_id": CLIENT_ID, "client_secret": "rotated-elsewhere"})
    with pytest.raises(UpstreamUnavailable, match="HTTP 401"):
        upstream.user("any", CALLBACK, VERIFIER)


@pytest.mark.parametrize(
    "claims",
    [
        {"aud": "another-client"},
        {"iss": "https://impostor.example"},
        {"exp": int(time.time()) - 3600},
        {"sub": ""},
    ],
    ids=["other audience", "other issuer", "expired", "no subject"],
)
def test_an_id_token_not_for_this_client_from_this_issuer_is_not_trusted(
    issuer: LocalIssuer, claims: dict[str, Any]
) -> None:
    def post(url: str, form: dict[str, str], headers: dict[str, str]) -> tuple[int, bytes]:
        now = int(time.time())
        payload = {"iss": issuer.issuer, "aud": CLIENT_ID, "sub": "u", "iat": now, "exp": now + 60, **claims}
        id_token = issuer.mint("u", None, claims=payload)  # any signed JWT: its claims are what count
        return 200, json.dumps({"id_token": id_token, "access_token": "x", "token_type": "Bearer"}).encode()

    with pytest.raises(UpstreamUnavailable, match="ID token"):
        client(issuer, post=post).user("code", CALLBACK, VERIFIER)


def test_an_unreachable_upstream_or_an_unusable_secret_is_unavailability(issuer: LocalIssuer) -> None:
    gone = UpstreamClient(
        "http://127.0.0.1:9",
        secret_id="s",
        secrets_client=Secrets({"client_id": "a", "client_secret": "b"}),
        scopes=("openid",),
        fetch=urllib_fetch(0.5),
    )
    with pytest.raises(UpstreamUnavailable, match="no usable upstream metadata"):
        gone.authorization_url(CALLBACK, "s", challenge(VERIFIER))
    for bad in ('{"client_id": "only"}', "not json", {"client_id": "", "client_secret": "x"}):
        with pytest.raises(FacadeUnavailable):
            client(issuer, bad).credentials()


def test_the_client_secret_is_reread_after_five_minutes(issuer: LocalIssuer) -> None:
    now = [0.0]
    upstream = client(issuer, monotonic=lambda: now[0])
    secrets = upstream.secrets_client
    upstream.credentials()
    upstream.credentials()
    now[0] = 301.0
    upstream.credentials()
    assert secrets.reads == 2


def test_a_machine_clients_credentials_are_checked_upstream_and_name_it_there(issuer: LocalIssuer) -> None:
    upstream = client(issuer)
    machine, scopes = upstream.client_credentials(CLIENT_ID, CLIENT_SECRET, "mcp:tools")
    assert machine.subject == CLIENT_ID and machine.claims["iss"] == issuer.issuer and scopes == ("mcp:tools",)
    with pytest.raises(OAuthError) as refused:
        upstream.client_credentials(CLIENT_ID, "wrong", None)
    assert refused.value.error == "invalid_client" and refused.value.status == 401


def test_g3_the_signed_in_users_id_token_claims_come_back_with_the_subject() -> None:
    # Given the development issuer asking the user for a tenant, put in the custom:tenant claim
    with running_issuer(clients={CLIENT_ID: CLIENT_SECRET}, tenant_claim="custom:tenant") as issuer:
        upstream = client(issuer)
        url = upstream.authorization_url(CALLBACK, "s", challenge(VERIFIER))
        query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
        # When the user signs in as tenant acme (the login form's field) and the code is redeemed
        user = upstream.user(issuer.issue_code({**query, "tenant": "acme"}), CALLBACK, VERIFIER)
        # Then the facade sees the ID token's claim; an empty field gives a user without it
        assert user.subject == DEV_USER and user.claims["custom:tenant"] == "acme"
        bare = upstream.user(issuer.issue_code({**query, "tenant": ""}), CALLBACK, VERIFIER)
        assert "custom:tenant" not in bare.claims
