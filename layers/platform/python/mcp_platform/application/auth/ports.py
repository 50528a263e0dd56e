"""What the authentication decisions need from outside: a key directory and an issuer's keys.

The adapters implement these structurally (:mod:`mcp_platform.adapters.dynamodb.api_keys`,
:mod:`mcp_platform.adapters.jwks`); the composition root injects them. Errors a port may raise
live here, so the deciding code names them without importing an adapter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

Jwk = dict[str, Any]
"""One JSON Web Key (RFC 7517) as the issuer published it."""


class IssuerUnavailable(Exception):
    """The issuer's metadata or keys could not be fetched or read: not the caller's fault (503)."""


class SigningKeySource(Protocol):
    """The token issuer's current signing keys (fetched, cached and refreshed by the adapter)."""

    async def key_for(self, kid: str | None) -> Jwk | None:
        """The key named ``kid`` (None: the issuer's only key), None if unknown; raises
        :class:`IssuerUnavailable` when no current key set can be had."""
        ...


@dataclass(frozen=True)
class KeyHolder:
    """What an API key's record says of its holder."""

    principal: str
    tenant: str | None = None
    groups: frozenset[str] = frozenset()
    """The groups the key was minted with (``--group``): what policies see as the caller's."""


class ApiKeyDirectory(Protocol):
    """Who a bearer API key belongs to, read consistently (a revoked key must not linger)."""

    def holder_of(self, key: str) -> KeyHolder | None: ...
