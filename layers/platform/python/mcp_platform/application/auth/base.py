"""The authentication interface: one module per mode (API keys, OAuth 2.1, loopback)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mcp_platform.application.auth.tenants import owner_of

REALM = "mcp"
# OAuth principals are "oauth:<issuer>#<sub>": no API-key principal may start with it, so the
# two kinds of credentials can never name the same owner (sessions are bound to the id).
OAUTH_PRINCIPAL_PREFIX = "oauth:"
# Machine clients get tokens with the client_credentials grant (advertised in server/discover).
CLIENT_CREDENTIALS_EXTENSION = "io.modelcontextprotocol/oauth-client-credentials"


@dataclass(frozen=True)
class Principal:
    """Who is calling. Sessions are bound to ``id``."""

    id: str
    kind: str
    scopes: frozenset[str] | None = None
    """The scopes the credential grants; None = not scope-limited (API keys, loopback), so
    tools that declare scopes are open to it."""
    client_id: str | None = None
    """The OAuth client the token was issued to (its ``client_id`` or ``azp`` claim); None for
    API keys and loopback. Rate limits may count per client."""
    tenant: str | None = None
    """The tenant the caller belongs to (its API key's, or the OAuth claim the deployment names);
    None for a caller without one."""
    groups: frozenset[str] = frozenset()
    """The groups the caller is in: an OAuth token's groups claim (Amazon Cognito's
    ``cognito:groups``), an API key's ``--group``s. What policies read (``principal in Group::"..."``)."""

    @property
    def owner(self) -> str:
        """What this caller's sessions, tasks, handles and counters are bound to
        (:func:`~mcp_platform.application.auth.tenants.owner_of`): its id, tenant-qualified."""
        return owner_of(self.id, self.tenant)

    def lacks(self, required: tuple[str, ...]) -> tuple[str, ...]:
        if self.scopes is None:
            return ()
        return tuple(scope for scope in required if scope not in self.scopes)


def bearer_challenge(error: str | None, description: str, **params: str) -> str:
    """``WWW-Authenticate: Bearer ...`` (RFC 6750 section 3; ``resource_metadata`` RFC 9728).

    Values are quoted strings: a quote or backslash inside one would break the header, so
    they are removed (descriptions are our own text, scopes are scope-tokens)."""
    parts = [f'{name}="{_quotable(value)}"' for name, value in params.items() if value]
    if error:
        parts += [f'error="{error}"', f'error_description="{_quotable(description)}"']
    return "Bearer " + ", ".join(parts)


def _quotable(value: str) -> str:
    return value.replace("\\", "").replace('"', "")


class AuthError(Exception):
    """Authentication failed: 401 with a ``WWW-Authenticate`` challenge (RFC 6750)."""

    def __init__(
        self,
        message: str,
        error: str | None = "invalid_token",
        status: int = 401,
        *,
        challenge: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.www_authenticate = challenge or bearer_challenge(error, message, realm=REALM)


class InsufficientScope(AuthError):
    """A valid token without the scopes the request needs: 403 (RFC 6750 section 3.1)."""

    def __init__(self, missing: tuple[str, ...], challenge: str | None = None) -> None:
        super().__init__(f"Missing scope: {' '.join(missing)}", "insufficient_scope", 403, challenge=challenge)
        self.missing = missing


class Authenticator(Protocol):
    async def authenticate(self, headers: dict[str, str], client_host: str) -> Principal:
        """Return the caller or raise :class:`AuthError`."""
        ...


def bearer_token(headers: dict[str, str]) -> str:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if not value:
        raise AuthError("Missing bearer token", error=None)
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError("Authorization must be 'Bearer <token>'", error="invalid_request")
    return token.strip()
