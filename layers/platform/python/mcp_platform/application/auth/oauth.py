"""``MCP_AUTH=oauth``: the endpoint as an OAuth 2.1 resource server accepting the issuer's JWTs.

A token is accepted when its signature verifies against the issuer's published key named by its
``kid`` (from a :class:`~mcp_platform.application.auth.ports.SigningKeySource`) with an
algorithm from :data:`ALGORITHMS` that fits that key's type (so never ``none``, never HMAC
keyed with a public key), ``iss`` is the configured issuer, ``aud`` names this resource
(RFC 8707), ``exp``/``nbf`` hold within :data:`LEEWAY_SECONDS`, and it carries the required
scopes (``scope``, space separated, or ``scp``). The principal is ``oauth:<iss>#<sub>``:
issuer-qualified, so two issuers never share one, and outside the API-key namespace.

PyJWT (with ``cryptography``) costs 0.1-0.2 s to import: it is imported on the first token,
so a stack serving only API keys never loads it.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from mcp_platform.application.auth.base import (
    OAUTH_PRINCIPAL_PREFIX,
    AuthError,
    InsufficientScope,
    Principal,
    bearer_token,
)
from mcp_platform.application.auth.ports import Jwk, SigningKeySource
from mcp_platform.application.auth.resource import ProtectedResource
from mcp_platform.application.auth.tenants import TENANT_SYNTAX, is_tenant
from mcp_platform.config import OAuthSettings

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
KEY_TYPE = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}  # algorithm family -> JWK kty
LEEWAY_SECONDS = 30
MAX_SUBJECT = 255


class MisdirectedRequest(AuthError):
    """No resource identifier for this Host (no ``MCP_OAUTH_AUDIENCE``, not a known name): 421."""

    def __init__(self) -> None:
        super().__init__("This host is not a resource of this server (set MCP_OAUTH_AUDIENCE)", None, 421)


class OAuthAuthenticator:
    def __init__(self, settings: OAuthSettings, resource: ProtectedResource, keys: SigningKeySource) -> None:
        self.settings = settings
        self.resource = resource
        self.keys = keys

    async def authenticate(self, headers: dict[str, str], client_host: str) -> Principal:
        audience = self.resource.resource_for(headers)
        if audience is None:
            raise MisdirectedRequest()
        try:
            claims = await self.validate(bearer_token(headers), audience)
        except AuthError as exc:
            raise AuthError(str(exc), exc.error, challenge=self._challenge(headers, exc)) from exc
        try:
            tenant = token_tenant(claims, self.settings.tenant_claim)
        except AuthError as exc:
            raise AuthError(str(exc), exc.error, challenge=self._challenge(headers, exc)) from exc
        principal = Principal(
            id=f"{OAUTH_PRINCIPAL_PREFIX}{self.settings.issuer}#{claims['sub']}",
            kind="oauth",
            scopes=token_scopes(claims),
            client_id=token_client(claims),
            tenant=tenant,
            groups=token_groups(claims),
        )
        missing = principal.lacks(self.settings.scopes)
        if missing:
            raise InsufficientScope(missing, self.resource.challenge(headers, "insufficient_scope", "Missing scope"))
        return principal

    def _challenge(self, headers: dict[str, str], exc: AuthError) -> str:
        return self.resource.challenge(headers, exc.error, str(exc))

    async def validate(self, token: str, audience: str) -> dict[str, Any]:
        """The token's verified claims, or :class:`AuthError` saying what is wrong (never the token)."""
        jwt = _pyjwt()
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as exc:
            raise AuthError("Malformed token") from exc
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise AuthError("Token algorithm not accepted")
        kid = header.get("kid")
        jwk = await self.keys.key_for(kid if isinstance(kid, str) else None)
        if jwk is None:
            raise AuthError("Unknown signing key")
        key = _verifying_key(jwt, jwk, algorithm)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=[algorithm],
                issuer=self.settings.issuer,
                leeway=LEEWAY_SECONDS,
                # The audience is checked below: Cognito access tokens carry none (client_id).
                options={"require": ["exp", "iss", "sub"], "verify_aud": False},
            )
        except jwt.ExpiredSignatureError as exc:
            raise AuthError("Token expired") from exc
        except jwt.ImmatureSignatureError as exc:
            raise AuthError("Token not yet valid") from exc
        except jwt.InvalidIssuerError as exc:
            raise AuthError("Token from another issuer") from exc
        except jwt.InvalidTokenError as exc:
            raise AuthError(f"Invalid token ({type(exc).__name__})") from exc
        self._check_audience(claims, audience)
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise AuthError("Token has no subject")
        if len(claims["sub"]) > MAX_SUBJECT:  # OpenID's limit; the principal is part of table keys
            raise AuthError("Token subject too long")
        return claims

    def _check_audience(self, claims: dict[str, Any], audience: str) -> None:
        aud = claims.get("aud")
        if aud is None:
            # Amazon Cognito access tokens have no aud; they name the app client instead, and
            # token_use tells them from ID tokens (which do carry aud = the client id).
            client_id = claims.get("client_id")
            if client_id in self.settings.client_ids and claims.get("token_use", "access") == "access":
                return
            raise AuthError("Token has no audience")
        audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        if audience not in audiences:
            raise AuthError("Token is for another audience")


def token_client(claims: dict[str, Any]) -> str | None:
    """The client a token was issued to: RFC 9068 ``client_id``, else OpenID's ``azp``."""
    for name in ("client_id", "azp"):
        value = claims.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def token_tenant(claims: dict[str, Any], claim: str) -> str | None:
    """The caller's tenant from ``claim`` (none configured: None). A deployment that names the
    claim has tenants: a token without a valid one is refused (401 ``invalid_token``), never
    served as a caller without a tenant."""
    if not claim:
        return None
    value = claims.get(claim)
    if not is_tenant(value):
        raise AuthError(f"The token's {claim!r} claim names no tenant ({TENANT_SYNTAX})")
    assert isinstance(value, str)
    return value


def token_scopes(claims: dict[str, Any]) -> frozenset[str]:
    """RFC 9068 ``scope`` (space separated); ``scp`` as a list (Okta) or a string (Entra ID)."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(item for item in value if isinstance(item, str))
    return frozenset(found)


GROUP_CLAIMS = ("cognito:groups", "groups")
"""Where a token names its subject's groups: Amazon Cognito's claim, then the common one (Okta,
Keycloak, Entra ID with group claims on)."""


def token_groups(claims: dict[str, Any]) -> frozenset[str]:
    """The subject's groups: a list of names (or one space-separated string) under :data:`GROUP_CLAIMS`."""
    found: set[str] = set()
    for name in GROUP_CLAIMS:
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(item for item in value if isinstance(item, str) and item)
    return frozenset(found)


def _verifying_key(jwt: ModuleType, jwk: Jwk, algorithm: str) -> Any:
    """The JWK as a key bound to ``algorithm``, refused when the two do not belong together."""
    if jwk.get("kty") != KEY_TYPE[algorithm[:2]]:
        raise AuthError("Token algorithm does not match its key")
    if "alg" in jwk and jwk["alg"] != algorithm:
        raise AuthError("Token algorithm does not match its key")
    try:
        return jwt.PyJWK(jwk, algorithm=algorithm)
    except jwt.PyJWKError as exc:
        raise AuthError("Signing key unusable") from exc


def _pyjwt() -> ModuleType:
    import jwt  # first use only: see the module docstring

    return jwt
