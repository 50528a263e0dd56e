"""The facade as a confidential OpenID Connect client of the upstream issuer (Cognito or any).

The upstream's endpoints come from its discovery document (RFC 8414, then OpenID discovery: the
same lookup as the resource server's, :func:`mcp_platform.adapters.jwks.metadata_urls`), fetched on
the first sign-in and kept. The facade's client id and secret come from a Secrets Manager secret
``{"client_id": ..., "client_secret": ...}``, re-read every five minutes (a rotated secret
reaches warm instances). A sign-in is the authorization-code grant with PKCE (S256) and
``openid``; the user is the ID token's ``sub``, with its other claims (a tenant claim is read
from them).

The ID token arrives in the token endpoint's response to the facade's own authenticated TLS
request, so its signature is not checked (OpenID Connect Core 3.1.3.7: TLS server validation
may stand in for it on this path); its ``iss``, ``aud`` and ``exp`` are. Upstream access and
refresh tokens are not kept: the facade issues its own tokens, bound to this resource.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from mcp_platform.adapters.jwks import Fetch, IssuerUnavailable, metadata_urls
from mcp_platform.authorization_server.errors import (
    FacadeUnavailable,
    InvalidClient,
    OAuthError,
    UpstreamUnavailable,
)
from mcp_platform.authorization_server.ports import UpstreamUser
from mcp_platform.config import ConfigError, checked_url
from mcp_platform.protocol.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient

TOKEN_TIMEOUT_SECONDS = 5.0
MAX_RESPONSE_BYTES = 64 * 1024
SECRET_REFRESH_SECONDS = 300.0
LEEWAY_SECONDS = 60

Post = Callable[[str, dict[str, str], dict[str, str]], tuple[int, bytes]]
"""(url, form, headers) -> (status, body)."""


def urllib_post(url: str, form: dict[str, str], headers: dict[str, str]) -> tuple[int, bytes]:
    data = urlencode(form).encode()
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")  # noqa: S310 - checked_url
    try:
        with urllib.request.urlopen(request, timeout=TOKEN_TIMEOUT_SECONDS) as response:  # noqa: S310
            return int(response.status), bytes(response.read(MAX_RESPONSE_BYTES + 1))
    except urllib.error.HTTPError as exc:  # 4xx/5xx carry the OAuth error body
        return int(exc.code), bytes(exc.read(MAX_RESPONSE_BYTES + 1))


@dataclass(frozen=True)
class Endpoints:
    authorization: str
    token: str


class UpstreamClient:
    def __init__(
        self,
        issuer: str,
        *,
        secret_id: str,
        secrets_client: SecretsManagerClient,
        scopes: tuple[str, ...],
        fetch: Fetch,
        post: Post = urllib_post,
        clock: Clock = SYSTEM_CLOCK,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self.secret_id = secret_id
        self.secrets_client = secrets_client
        self.scopes = scopes
        self.fetch = fetch
        self.post = post
        self._clock = clock
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._endpoints: Endpoints | None = None
        self._credentials: tuple[str, str] | None = None
        self._credentials_at = 0.0

    # -- configuration, read on first use ----------------------------------------------------------
    def endpoints(self) -> Endpoints:
        """Blocking: the first call fetches the upstream's discovery document."""
        with self._lock:
            if self._endpoints is None:
                self._endpoints = self._discover()
            return self._endpoints

    def credentials(self) -> tuple[str, str]:
        """(client id, client secret). Blocking: reads the secret on first use and every 5 min."""
        with self._lock:
            if self._credentials is None or self._monotonic() - self._credentials_at >= SECRET_REFRESH_SECONDS:
                self._credentials = self._read_credentials()
                self._credentials_at = self._monotonic()
            return self._credentials

    def _discover(self) -> Endpoints:
        failures = []
        for url in metadata_urls(self.issuer):
            try:
                document = json.loads(self.fetch(url))
            except (OSError, ValueError, IssuerUnavailable) as exc:
                failures.append(f"{url}: {type(exc).__name__}")
                continue
            if not isinstance(document, dict) or document.get("issuer") != self.issuer:
                failures.append(f"{url}: not this issuer's metadata")
                continue
            try:
                return Endpoints(
                    checked_url("authorization_endpoint", str(document.get("authorization_endpoint", ""))),
                    checked_url("token_endpoint", str(document.get("token_endpoint", ""))),
                )
            except ConfigError as exc:
                failures.append(f"{url}: {exc}")
        raise UpstreamUnavailable("no usable upstream metadata: " + "; ".join(failures))

    def _read_credentials(self) -> tuple[str, str]:
        try:
            response = self.secrets_client.get_secret_value(SecretId=self.secret_id)
        except Exception as exc:
            raise FacadeUnavailable(f"upstream client secret unreadable ({type(exc).__name__})") from exc
        try:
            value = json.loads(str(response.get("SecretString", "")))
        except ValueError:
            raise FacadeUnavailable("upstream client secret is not a JSON object") from None
        if not isinstance(value, dict) or not all(
            isinstance(value.get(k), str) and value[k] for k in ("client_id", "client_secret")
        ):
            raise FacadeUnavailable('upstream client secret needs "client_id" and "client_secret"')
        return value["client_id"], value["client_secret"]

    # -- the sign-in -------------------------------------------------------------------------------
    def authorization_url(self, redirect_uri: str, state: str, code_challenge: str) -> str:
        """Where the browser signs in. Blocking (discovery, credentials on first use)."""
        client_id, _ = self.credentials()
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(self.scopes),
            "state": state,
            "code_challenge": code_challenge,
            "code_challenge_method": "S256",
        }
        endpoint = self.endpoints().authorization
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"

    def user(self, code: str, redirect_uri: str, code_verifier: str) -> UpstreamUser:
        """Redeem the upstream code; the signed-in user (the ID token's ``sub`` and claims). Blocking.

        Raises UpstreamUnavailable when the upstream cannot be reached or answers nonsense, and
        ValueError when it refuses the code (expired, replayed: the user must sign in again)."""
        client_id, client_secret = self.credentials()
        basic = base64.b64encode(f"{_form_quote(client_id)}:{_form_quote(client_secret)}".encode()).decode()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": code_verifier,
        }
        headers = {
            "authorization": f"Basic {basic}",
            "content-type": "application/x-www-form-urlencoded",
            "accept": "application/json",
        }
        answer = self._token_request(form, headers)
        status = answer["_status"]
        if status == 400 and answer.get("error") == "invalid_grant":
            raise ValueError("the upstream sign-in expired or was already used")
        if status != 200 or not isinstance(answer.get("id_token"), str):
            raise UpstreamUnavailable(f"upstream token endpoint answered HTTP {status} without an ID token")
        return self._id_token_user(answer["id_token"], client_id)

    def client_credentials(
        self, client_id: str, client_secret: str, scope: str | None
    ) -> tuple[UpstreamUser, tuple[str, ...]]:
        """A machine client's own credentials, checked by the upstream (client_credentials grant):
        (the client as the upstream's access token names it, its claims included; the scopes it
        was granted). Blocking.

        The upstream's access token is not handed out (the facade issues its own, bound to this
        resource): its claims are read from the token endpoint's direct answer, as the ID token's."""
        basic = base64.b64encode(f"{_form_quote(client_id)}:{_form_quote(client_secret)}".encode()).decode()
        form = {"grant_type": "client_credentials", **({"scope": scope} if scope else {})}
        headers = {
            "authorization": f"Basic {basic}",
            "content-type": "application/x-www-form-urlencoded",
            "accept": "application/json",
        }
        answer = self._token_request(form, headers)
        if answer.get("_status") in (400, 401):
            error = str(answer.get("error", ""))
            if error == "invalid_scope":
                raise OAuthError("invalid_scope", "the issuer refused the requested scope")
            if error == "unauthorized_client":
                raise OAuthError("unauthorized_client", "this client may not use client_credentials")
            raise InvalidClient("the issuer refused the client's credentials")
        token = answer.get("access_token")
        if answer.get("_status") != 200 or not isinstance(token, str):
            raise UpstreamUnavailable(f"upstream token endpoint answered HTTP {answer.get('_status')} without a token")
        claims = _claims(token)
        subject = claims.get("sub")
        if claims.get("iss") != self.issuer or not isinstance(subject, str) or not subject or len(subject) > 255:
            raise UpstreamUnavailable("the upstream access token is not from this issuer or has no subject")
        granted = answer.get("scope") if isinstance(answer.get("scope"), str) else claims.get("scope", "")
        return UpstreamUser(subject, claims), tuple(dict.fromkeys(str(granted).split()))

    def _token_request(self, form: dict[str, str], headers: dict[str, str]) -> dict[str, Any]:
        """The upstream token endpoint's JSON answer, its HTTP status under ``_status``."""
        try:
            status, body = self.post(self.endpoints().token, form, headers)
        except OSError as exc:
            raise UpstreamUnavailable(f"upstream token endpoint unreachable ({type(exc).__name__})") from exc
        if len(body) > MAX_RESPONSE_BYTES:
            raise UpstreamUnavailable("upstream token response too large")
        try:
            answer = json.loads(body)
        except ValueError:
            raise UpstreamUnavailable(f"upstream token endpoint answered HTTP {status} without JSON") from None
        if not isinstance(answer, dict):
            raise UpstreamUnavailable(f"upstream token endpoint answered HTTP {status} without a JSON object")
        return {**answer, "_status": status}

    def _id_token_user(self, id_token: str, client_id: str) -> UpstreamUser:
        claims = _claims(id_token)
        audience = claims.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
        exp = claims.get("exp")
        if (
            claims.get("iss") != self.issuer
            or client_id not in audiences
            or not isinstance(exp, int | float)
            or exp + LEEWAY_SECONDS < self._clock.now()
        ):
            raise UpstreamUnavailable("the upstream ID token is not for this client from this issuer")
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject or len(subject) > 255:
            raise UpstreamUnavailable("the upstream ID token has no usable subject")
        return UpstreamUser(subject, claims)


def _claims(token: str) -> dict[str, Any]:
    parts = token.split(".")
    if len(parts) != 3:
        raise UpstreamUnavailable("the upstream ID token is not a JWT")
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        raise UpstreamUnavailable("the upstream ID token is not a JWT") from None
    if not isinstance(payload, dict):
        raise UpstreamUnavailable("the upstream ID token is not a JWT")
    return payload


def _form_quote(value: str) -> str:
    """RFC 6749 section 2.3.1: client id and secret are form-urlencoded inside Basic."""
    return quote(value, safe="")
