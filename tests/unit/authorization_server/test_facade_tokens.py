"""The facade's access tokens and the endpoint's trust in them: bound to this resource, signed
by the current key of the seed set, verified by any instance holding the same seeds, principal
``oauth:<upstream issuer>#<sub>``; anything else goes to the issuer's own validation."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import jwt
import pytest

from mcp_platform.application.auth.base import AuthError, InsufficientScope, Principal
from mcp_platform.application.auth.resource import ProtectedResource
from mcp_platform.application.interactive.keys import StaticKeyRing
from mcp_platform.authorization_server.signing import SigningKeys
from mcp_platform.authorization_server.tokens import FacadeTokens, mint_access_token
from tests.support.oauth import b64url

UPSTREAM = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_pool"
RESOURCE = "http://127.0.0.1:8000/mcp"
ISSUER = "http://127.0.0.1:8000"
HOST = {"host": "127.0.0.1:8000"}


class Upstream:
    """The issuer's own authenticator: records what reached it."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def authenticate(self, headers: dict[str, str], client_host: str) -> Principal:
        self.seen.append(headers.get("authorization", ""))
        return Principal(id="upstream", kind="oauth", scopes=frozenset())


def keys(current: str = "k1", **seeds: bytes) -> SigningKeys:
    return SigningKeys(StaticKeyRing(current, seeds or {"k1": b"a" * 48}))


def token(signing: SigningKeys, **overrides: Any) -> str:
    options: dict[str, Any] = {
        "issuer": ISSUER,
        "subject": "user-123",
        "audience": RESOURCE,
        "client_id": "mcpc_x",
        "scope": ("mcp:tools",),
        "now": int(time.time()),
        "lifetime_seconds": 600,
    }
    options.update(overrides)
    return mint_access_token(signing, **options)


def verifier(signing: SigningKeys, upstream: Upstream | None = None, tenant_claim: str = "") -> FacadeTokens:
    resource = ProtectedResource(issuer=UPSTREAM, required_scopes=("mcp:tools",), facade=True)
    return FacadeTokens(
        upstream or Upstream(),
        resource,
        signing,
        upstream_issuer=UPSTREAM,
        required_scopes=("mcp:tools",),
        tenant_claim=tenant_claim,
    )


def authenticate(tokens: FacadeTokens, bearer: str, headers: dict[str, str] = HOST) -> Principal:
    return asyncio.run(tokens.authenticate({**headers, "authorization": f"Bearer {bearer}"}, "127.0.0.1"))


def test_a_facade_token_names_the_upstream_subject_with_its_scopes() -> None:
    signing = keys()
    principal = authenticate(verifier(signing), token(signing))
    assert principal.id == f"oauth:{UPSTREAM}#user-123"
    assert principal.scopes == frozenset({"mcp:tools"}) and principal.kind == "oauth"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"audience": "http://127.0.0.1:9999/mcp"}, "another audience"),
        ({"now": int(time.time()) - 3600}, "expired"),
    ],
    ids=["another resource", "expired"],
)
def test_a_facade_token_for_another_resource_or_expired_is_401(overrides: dict[str, Any], message: str) -> None:
    signing = keys()
    with pytest.raises(AuthError, match=message) as refused:
        authenticate(verifier(signing), token(signing, **overrides))
    assert refused.value.status == 401 and "resource_metadata=" in refused.value.www_authenticate


def test_a_token_signed_with_other_seeds_or_not_really_signed_is_refused() -> None:
    ours, theirs = keys(), keys(k1=b"b" * 48)
    with pytest.raises(AuthError, match="Invalid token"):
        authenticate(verifier(ours), token(theirs))  # same kid, other key: the signature fails
    claims = jwt.decode(token(ours), options={"verify_signature": False})
    header = b64url(b'{"alg":"none","kid":"k1"}')
    unsigned = f"{header}.{b64url(jwt.utils.base64url_decode(token(ours).split('.')[1]))}."
    with pytest.raises(AuthError, match="algorithm"):
        authenticate(verifier(ours), unsigned)
    hs = jwt.encode(claims, "k" * 32, algorithm="HS256", headers={"kid": "k1"})
    with pytest.raises(AuthError, match="algorithm"):
        authenticate(verifier(ours), hs)


def test_rotation_keeps_tokens_of_the_old_key_valid_and_signs_with_the_new_one() -> None:
    before = keys("k1", k1=b"a" * 48)
    old_token = token(before)
    after = keys("k2", k1=b"a" * 48, k2=b"c" * 48)  # a seed added and made current
    new_token = token(after)
    assert jwt.get_unverified_header(new_token)["kid"] == "k2"
    assert authenticate(verifier(after), old_token).id.endswith("#user-123")
    assert authenticate(verifier(after), new_token).id.endswith("#user-123")
    assert [key["kid"] for key in after.jwks()["keys"]] == ["k1", "k2"]
    retired = keys("k2", k2=b"c" * 48)  # the old seed dropped once its tokens expired
    with pytest.raises(AuthError, match="Unknown signing key"):
        authenticate(verifier(retired), old_token)


def test_every_instance_derives_the_same_keys_from_the_same_seeds() -> None:
    one, other = keys(), keys()
    assert one.jwks() == other.jwks()
    jwk = one.jwks()["keys"][0]
    assert jwk["kty"] == "EC" and jwk["crv"] == "P-256" and jwk["alg"] == "ES256" and "d" not in jwk
    assert authenticate(verifier(other), token(one)).id.endswith("#user-123")


def test_other_credentials_go_to_the_issuers_own_validation() -> None:
    signing, upstream = keys(), Upstream()
    tokens = verifier(signing, upstream)
    foreign = token(signing, issuer="https://elsewhere.example")  # not this origin's facade
    for credential in (foreign, "mcpk_an_api_key", "not.a.jwt"):
        assert authenticate(tokens, credential).id == "upstream"
    assert len(upstream.seen) == 3
    # A facade token presented at another host is for another issuer there: not ours to verify.
    assert authenticate(tokens, token(signing), {"host": "localhost:8000"}).id == "upstream"


def test_a_facade_token_without_the_required_scope_is_403() -> None:
    signing = keys()
    with pytest.raises(InsufficientScope) as refused:
        authenticate(verifier(signing), token(signing, scope=()))
    assert refused.value.status == 403


def test_g3_a_facade_tokens_tenant_claim_makes_a_tenant_caller_as_an_issuers_token_would() -> None:
    # Given a deployment whose tenant claim is custom:tenant, and a facade token carrying it
    signing = keys()
    tokens = verifier(signing, tenant_claim="custom:tenant")
    bearer = token(signing, tenant_claim="custom:tenant", tenant="acme")
    # When it is presented
    principal = authenticate(tokens, bearer)
    # Then the caller is the upstream subject within that tenant: its owner is tenant-qualified
    assert principal.tenant == "acme" and principal.owner == f"tenant:acme/oauth:{UPSTREAM}#user-123"
    # Without the claim configured the same token makes a caller without a tenant
    assert authenticate(verifier(signing), bearer).tenant is None


@pytest.mark.parametrize("tenant", [None, "", "two words", "-leading", "t" * 65], ids=repr)
def test_g3_with_tenants_a_facade_token_without_a_valid_tenant_is_401(tenant: str | None) -> None:
    signing = keys()
    bearer = token(signing, tenant_claim="custom:tenant", tenant=tenant)
    with pytest.raises(AuthError, match="custom:tenant") as refused:
        authenticate(verifier(signing, tenant_claim="custom:tenant"), bearer)
    assert refused.value.status == 401 and "resource_metadata=" in refused.value.www_authenticate


def test_a_tenant_claim_named_like_a_registered_claim_never_replaces_it() -> None:
    signing = keys()
    claims = jwt.decode(token(signing, tenant_claim="sub", tenant="acme"), options={"verify_signature": False})
    assert claims["sub"] == "user-123"
