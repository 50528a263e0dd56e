"""The authentication interface. A new mode (OAuth 2.1 / JWT) is one more module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

REALM = "mcp"


@dataclass(frozen=True)
class Principal:
    """Who is calling. Sessions are bound to ``id``."""

    id: str
    kind: str


class AuthError(Exception):
    """Authentication failed: 401 with a ``WWW-Authenticate`` challenge (RFC 6750)."""

    def __init__(self, message: str, error: str | None = "invalid_token", status: int = 401) -> None:
        super().__init__(message)
        self.status = status
        challenge = f'Bearer realm="{REALM}"'
        if error:
            challenge += f', error="{error}", error_description="{message}"'
        self.www_authenticate = challenge


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
