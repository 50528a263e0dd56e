"""Clients of the facade: registered ones (RFC 7591) and client ID metadata documents, one record.

Registration accepts what an MCP client needs and refuses the rest with
``invalid_client_metadata`` / ``invalid_redirect_uri`` (RFC 7591 section 3.2.2): the
authorization-code grant (with refresh tokens), response type ``code``, and one of the token
endpoint authentication methods ``none`` (a public client: PKCE alone), ``client_secret_basic``
or ``client_secret_post`` (a secret is minted and shown once; only its SHA-256 is stored). Names
are shown on the consent page, so they are bounded and stripped of control characters.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_platform.authorization_server.errors import OAuthError
from mcp_platform.authorization_server.urls import BadUrl, check_redirect_uri

AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
GRANT_TYPES = ("authorization_code", "refresh_token")
DEFAULT_AUTH_METHOD = "client_secret_basic"  # RFC 7591 section 2: the default when none is named
MAX_REDIRECT_URIS = 10
MAX_NAME_CHARS = 100
CLIENT_ID_PREFIX = "mcpc_"
CLIENT_ID_BYTES = 24
SECRET_BYTES = 32


@dataclass(frozen=True)
class ClientRecord:
    client_id: str
    client_name: str
    redirect_uris: tuple[str, ...]
    auth_method: str
    grant_types: tuple[str, ...]
    secret_hash: str = ""
    """SHA-256 of the secret (hex) for ``client_secret_*`` methods."""
    created_at: int = 0
    expires_at: int = 0
    """Registered clients: when the registration lapses unless used (epoch seconds). Documents: 0."""
    from_document: bool = False

    @property
    def refreshable(self) -> bool:
        return "refresh_token" in self.grant_types

    def secret_matches(self, secret: str) -> bool:
        return bool(self.secret_hash) and hmac.compare_digest(self.secret_hash, secret_hash(secret))


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_client_id() -> str:
    return CLIENT_ID_PREFIX + secrets.token_urlsafe(CLIENT_ID_BYTES)


def is_registered_client_id(value: str) -> bool:
    """The shape a minted id has: anything else is unknown before a table key is built from it."""
    body = value.removeprefix(CLIENT_ID_PREFIX)
    return (
        value.startswith(CLIENT_ID_PREFIX)
        and len(body) == 32
        and all(char.isascii() and (char.isalnum() or char in "-_") for char in body)
    )


def display_name(value: object, fallback: str) -> str:
    if not isinstance(value, str):
        return fallback
    printable = "".join(char for char in value if char.isprintable()).strip()
    return printable[:MAX_NAME_CHARS] or fallback


def metadata_fields(document: Mapping[str, Any], *, registration: bool) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
    """(redirect URIs, auth method, grant types) of a registration request or a metadata document,
    or OAuthError saying what is refused."""
    error = "invalid_client_metadata" if registration else "invalid_client"
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        raise OAuthError("invalid_redirect_uri" if registration else error, "redirect_uris must be a non-empty list")
    if len(uris) > MAX_REDIRECT_URIS:
        raise OAuthError(
            "invalid_redirect_uri" if registration else error, f"at most {MAX_REDIRECT_URIS} redirect_uris"
        )
    try:
        checked = tuple(dict.fromkeys(check_redirect_uri(uri) for uri in uris))
    except BadUrl as exc:
        raise OAuthError("invalid_redirect_uri" if registration else error, str(exc)) from None
    default_method = DEFAULT_AUTH_METHOD if registration else "none"
    method = document.get("token_endpoint_auth_method", default_method)
    allowed = AUTH_METHODS if registration else ("none",)  # a document cannot share a secret
    if method not in allowed:
        raise OAuthError(error, "token_endpoint_auth_method must be one of " + ", ".join(allowed))
    grants = document.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or "authorization_code" not in grants:
        raise OAuthError(error, "grant_types must include authorization_code")
    unsupported = [grant for grant in grants if grant not in GRANT_TYPES]
    if unsupported:
        raise OAuthError(error, f"unsupported grant_types: {', '.join(map(str, unsupported))[:200]}")
    responses = document.get("response_types", ["code"])
    if not isinstance(responses, list) or any(kind != "code" for kind in responses):
        raise OAuthError(error, 'response_types must be ["code"]')
    return checked, str(method), tuple(dict.fromkeys(str(grant) for grant in grants))


def register(request: object, now: int, lifetime_seconds: int) -> tuple[ClientRecord, str | None]:
    """A new client from an RFC 7591 registration request, and its secret (None: a public client)."""
    if not isinstance(request, dict):
        raise OAuthError("invalid_client_metadata", "the registration request must be a JSON object")
    uris, method, grants = metadata_fields(request, registration=True)
    secret = secrets.token_urlsafe(SECRET_BYTES) if method != "none" else None
    record = ClientRecord(
        client_id=new_client_id(),
        client_name=display_name(request.get("client_name"), "Unnamed client"),
        redirect_uris=uris,
        auth_method=method,
        grant_types=grants,
        secret_hash=secret_hash(secret) if secret else "",
        created_at=now,
        expires_at=now + lifetime_seconds,
    )
    return record, secret


def registration_response(record: ClientRecord, secret: str | None) -> dict[str, Any]:
    """RFC 7591 section 3.2.1: the registered metadata, the id and, once, the secret."""
    body: dict[str, Any] = {
        "client_id": record.client_id,
        "client_id_issued_at": record.created_at,
        "client_name": record.client_name,
        "redirect_uris": list(record.redirect_uris),
        "token_endpoint_auth_method": record.auth_method,
        "grant_types": list(record.grant_types),
        "response_types": ["code"],
    }
    if secret is not None:
        body["client_secret"] = secret
        body["client_secret_expires_at"] = record.expires_at
    return body
