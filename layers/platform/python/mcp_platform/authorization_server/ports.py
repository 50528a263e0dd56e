"""What the authorization server needs from outside: its state store, the upstream issuer, the
fetch of client ID metadata documents and its signing keys.

The values here (an authorization in progress, what a code or a refresh token was issued for)
are the facade's domain: the store keeps them, the service decides with them. Codes and tokens
are handed to the store in the clear and stored under their :func:`digest` only.

Implemented by :mod:`mcp_platform.adapters.dynamodb.facade_store`,
:mod:`mcp_platform.adapters.upstream_idp`, :mod:`mcp_platform.adapters.document_fetcher` and the
key ring of a Secrets Manager secret (``application.interactive.keys``), injected by the root.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp_platform.authorization_server.clients import ClientRecord


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@dataclass(frozen=True)
class PendingAuthorization:
    """An authorization request between the consent page and the upstream callback."""

    request_id: str
    client_id: str
    client_name: str
    redirect_uri: str
    redirect_uri_given: bool
    state: str
    code_challenge: str
    scope: tuple[str, ...]
    resource: str
    issuer: str
    browser_hash: str
    """SHA-256 of the secret in the consent cookie: only the browser that saw the page continues."""
    upstream_verifier: str
    refreshable: bool
    expires_at: int
    approved: bool = False


@dataclass(frozen=True)
class CodeGrant:
    """What an authorization code was issued for; the code itself is never stored."""

    client_id: str
    redirect_uri: str
    redirect_uri_given: bool
    code_challenge: str
    scope: tuple[str, ...]
    resource: str
    issuer: str
    subject: str
    refreshable: bool
    expires_at: int
    grant_id: str
    used: bool = False
    tenant: str | None = None
    """The signed-in user's tenant (the deployment names a tenant claim); None: no tenants."""


@dataclass(frozen=True)
class RefreshGrant:
    grant_id: str
    client_id: str
    subject: str
    scope: tuple[str, ...]
    resource: str
    issuer: str
    expires_at: int
    used: bool = False
    tenant: str | None = None
    """The sign-in's tenant, kept so every refreshed token carries it; None for a grant of a
    deployment without tenants (and for grants stored before tenants existed)."""


class Redemption:
    """The outcome of redeeming a code or rotating a refresh token."""

    DONE = "done"
    USED = "used"  # replayed: the grant must be revoked
    GONE = "gone"  # expired or revoked meanwhile


class AuthorizationStore(Protocol):
    """The facade's shared state: any instance serves any step of a sign-in.

    Reads are consistent and never return expired items. One-time use is the store's decision
    (a conditional write), never a read: of two concurrent redemptions exactly one is
    :attr:`Redemption.DONE`. Raises :class:`~.errors.FacadeUnavailable` when it cannot answer.
    """

    def put_client(self, record: ClientRecord) -> None: ...

    def client(self, client_id: str) -> ClientRecord | None: ...

    def extend_client(self, client_id: str, expires_at: int) -> None:
        """A used registration lives on; an expired one is not resurrected."""
        ...

    def put_request(self, pending: PendingAuthorization) -> None: ...

    def request(self, request_id: str) -> PendingAuthorization | None: ...

    def approve(self, request_id: str, browser_hash: str) -> bool:
        """Consent given, once, by the browser holding the cookie (False: not so, or already)."""
        ...

    def finish(self, request_id: str) -> bool:
        """The request is over (denied, or its callback arrived): False when it already was."""
        ...

    def put_code(self, code: str, grant: CodeGrant) -> None: ...

    def code(self, code: str) -> CodeGrant | None: ...

    def redeem_code(self, code: str, refresh: tuple[str, RefreshGrant] | None) -> str:
        """Mark the code used and, atomically, open its refresh grant and first token: a
        :class:`Redemption` value."""
        ...

    def refresh(self, token: str) -> RefreshGrant | None: ...

    def rotate_refresh(self, old: str, new: str, grant: RefreshGrant) -> str:
        """Retire ``old``, check the grant is alive, put ``new``: all or nothing (a :class:`Redemption`)."""
        ...

    def revoke_grant(self, grant_id: str) -> None:
        """Every refresh token of the grant stops working."""
        ...


@dataclass(frozen=True)
class UpstreamUser:
    """Who the upstream signed in: its ``sub``, and the claims of the token that said so (the ID
    token of a sign-in, a machine client's access token), from which the service reads what else
    it needs (the tenant claim)."""

    subject: str
    claims: Mapping[str, Any] = field(default_factory=dict)


class UpstreamIdentityProvider(Protocol):
    """The upstream issuer the facade signs users in with (an OpenID Connect provider). Blocking.

    Raises :class:`~.errors.UpstreamUnavailable` when it cannot be reached or answers nonsense,
    :class:`~.errors.FacadeUnavailable` when the facade's own credentials cannot be read.
    """

    def authorization_url(self, redirect_uri: str, state: str, code_challenge: str) -> str:
        """Where the browser signs in (authorization-code grant with PKCE S256)."""
        ...

    def user(self, code: str, redirect_uri: str, code_verifier: str) -> UpstreamUser:
        """Redeem the upstream code: the signed-in user (the ID token's ``sub`` and claims);
        ValueError when the upstream refuses the code (expired, replayed: the user must sign in again)."""
        ...

    def client_credentials(
        self, client_id: str, client_secret: str, scope: str | None
    ) -> tuple[UpstreamUser, tuple[str, ...]]:
        """A machine client's own credentials checked by the upstream: (the client as the upstream's
        access token names it, granted scopes); :class:`~.errors.InvalidClient` or
        :class:`~.errors.OAuthError` when refused."""
        ...


class DocumentRefused(Exception):
    """The document could not be fetched within the limits, or broke them (the message says how)."""


@dataclass(frozen=True)
class FetchedDocument:
    body: bytes
    cache_control: str = ""


class DocumentFetcher(Protocol):
    def fetch(self, url: str) -> FetchedDocument: ...


class KeySet(Protocol):
    def signing_key(self) -> tuple[str, bytes]: ...

    def verification_key(self, kid: str) -> bytes | None: ...

    def keys(self) -> dict[str, bytes]: ...
