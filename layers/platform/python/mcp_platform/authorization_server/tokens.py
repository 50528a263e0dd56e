"""The facade's access tokens, and the endpoint's trust in them.

An access token is a JWT (RFC 9068 shape, ``typ: at+jwt``) signed ES256 with the facade's
current key (:mod:`.signing`): ``iss`` the facade (this origin), ``aud`` the resource it was
requested for (RFC 8707: this endpoint's canonical URL), ``sub`` the user's subject at the
upstream issuer, ``client_id``, ``scope``, ``iat``/``exp``, ``jti``; with tenants (the deployment
names a tenant claim) also the user's tenant, under that claim's name, as the upstream said it at
sign-in.

The endpoint trusts them like any issuer's, without a network call: a bearer token whose ``iss``
is the facade of the request's own origin is verified against the facade's keys; every other
credential goes to the resource server's authenticator (upstream tokens, e.g. a machine client's
client-credentials token, stay valid). The principal is ``oauth:<upstream issuer>#<sub>``: the
same user whether the token came through the facade or straight from the upstream issuer, and
independent of the host name the client used, and the tenant is read from the token by the
same rule (:func:`~mcp_platform.application.auth.oauth.token_tenant`).
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from typing import Any

from mcp_platform.application.auth.base import (
    OAUTH_PRINCIPAL_PREFIX,
    Authenticator,
    AuthError,
    InsufficientScope,
    Principal,
)
from mcp_platform.application.auth.oauth import (
    LEEWAY_SECONDS,
    MAX_SUBJECT,
    token_client,
    token_groups,
    token_scopes,
    token_tenant,
)
from mcp_platform.application.auth.resource import ProtectedResource, origin
from mcp_platform.application.blocking import IN_THREAD, Blocking
from mcp_platform.authorization_server.signing import ALGORITHM, SigningKeys

TOKEN_TYPE = "at+jwt"  # noqa: S105 - RFC 9068 media type, not a secret


def mint_access_token(
    keys: SigningKeys,
    *,
    issuer: str,
    subject: str,
    audience: str,
    client_id: str,
    scope: tuple[str, ...],
    now: int,
    lifetime_seconds: int,
    tenant_claim: str = "",
    tenant: str | None = None,
) -> str:
    """Blocking (may read the key secret). ``tenant`` goes under ``tenant_claim`` when both are given."""
    import jwt  # PyJWT: loaded with the facade's first sign-in, as the resource server loads it

    kid, key = keys.signer()
    # The tenant first: a claim name that is also a registered one (sub, aud, ...) never replaces it.
    claims = {
        **({tenant_claim: tenant} if tenant_claim and tenant is not None else {}),
        "iss": issuer,
        "sub": subject,
        "aud": audience,
        "client_id": client_id,
        "scope": " ".join(scope),
        "iat": now,
        "exp": now + lifetime_seconds,
        "jti": secrets.token_urlsafe(12),
    }
    return jwt.encode(claims, key, algorithm=ALGORITHM, headers={"kid": kid, "typ": TOKEN_TYPE})


def unverified_issuer(token: str) -> str | None:
    """The ``iss`` a JWT claims (nothing is trusted from it: it only picks the verifier)."""
    parts = token.split(".")
    if len(parts) != 3 or len(parts[1]) > 8192:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    issuer = claims.get("iss") if isinstance(claims, dict) else None
    return issuer if isinstance(issuer, str) else None


class FacadeTokens:
    """``Authenticator``: the facade's own tokens here, anything else to ``upstream``."""

    def __init__(
        self,
        upstream: Authenticator,
        resource: ProtectedResource,
        keys: SigningKeys,
        *,
        upstream_issuer: str,
        required_scopes: tuple[str, ...],
        tenant_claim: str = "",
        blocking: Blocking = IN_THREAD,
    ) -> None:
        self.tenant_claim = tenant_claim
        """The deployment's tenant claim (``MCP_OAUTH_TENANT_CLAIM``): the facade's tokens carry it."""
        self.upstream = upstream
        self.blocking = blocking
        self.resource = resource
        self.keys = keys
        self.upstream_issuer = upstream_issuer
        self.required_scopes = required_scopes

    async def authenticate(self, headers: dict[str, str], client_host: str) -> Principal:
        scheme, _, credential = headers.get("authorization", "").partition(" ")
        credential = credential.strip()
        audience = self.resource.resource_for(headers)
        if scheme.lower() != "bearer" or audience is None or unverified_issuer(credential) != origin(audience):
            return await self.upstream.authenticate(headers, client_host)
        try:
            claims = await self.validate(credential, audience)
            tenant = token_tenant(claims, self.tenant_claim)
        except AuthError as exc:
            raise AuthError(
                str(exc), exc.error, challenge=self.resource.challenge(headers, exc.error, str(exc))
            ) from exc
        principal = Principal(
            id=f"{OAUTH_PRINCIPAL_PREFIX}{self.upstream_issuer}#{claims['sub']}",
            kind="oauth",
            scopes=token_scopes(claims),
            client_id=token_client(claims),
            tenant=tenant,
            groups=token_groups(claims),
        )
        missing = principal.lacks(self.required_scopes)
        if missing:
            raise InsufficientScope(missing, self.resource.challenge(headers, "insufficient_scope", "Missing scope"))
        return principal

    async def validate(self, token: str, audience: str) -> dict[str, Any]:
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as exc:
            raise AuthError("Malformed token") from exc
        if header.get("alg") != ALGORITHM:
            raise AuthError("Token algorithm not accepted")
        kid = header.get("kid")
        key = await self.blocking(self.keys.verifier, kid) if isinstance(kid, str) else None
        if key is None:
            raise AuthError("Unknown signing key")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=[ALGORITHM],
                issuer=origin(audience),
                audience=audience,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "sub", "aud"]},
            )
        except jwt.ExpiredSignatureError as exc:
            raise AuthError("Token expired") from exc
        except jwt.InvalidAudienceError as exc:
            raise AuthError("Token is for another audience") from exc
        except jwt.InvalidTokenError as exc:
            raise AuthError(f"Invalid token ({type(exc).__name__})") from exc
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject or len(subject) > MAX_SUBJECT:
            raise AuthError("Token has no usable subject")
        return claims
