"""A local OAuth authorization server for development and tests: ``python -m local.oauth_issuer``.

Serves RFC 8414 and OpenID metadata and a JWKS on 127.0.0.1, and mints RS256 access tokens with
keys generated at start (nothing is stored; every start has new keys). Tokens come from
:meth:`LocalIssuer.mint` (tests) or from its token endpoint, which grants ``client_credentials``
to any client without authentication: a development stand-in, bound to loopback only.

It also signs a fixed development user (:data:`DEV_USER`) in with the authorization-code grant
(PKCE S256, an ID token), the upstream of the OAuth facade in ``make dev``: ``/authorize`` shows a
one-button login page, whose form post redirects back with a one-time code. With ``clients``
given, only those clients (id: secret) may use it, authenticated at the token endpoint. With
``tenant_claim`` (``MCP_OAUTH_TENANT_CLAIM`` in ``make dev``) the login page also asks for the
user's tenant (prefilled :data:`DEV_TENANT`; empty: none), which its tokens carry in that claim.

    python -m local.oauth_issuer --port 9400 --audience http://127.0.0.1:8000/mcp
    MCP_AUTH=oauth MCP_OAUTH_ISSUER=http://127.0.0.1:9400 make dev
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import hmac
import html
import json
import secrets
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

LOOPBACK = "127.0.0.1"
DEV_USER = "local-developer"
DEV_TENANT = "local"
CODE_SECONDS = 120


@dataclass(frozen=True)
class IssuedCode:
    client_id: str
    redirect_uri: str
    code_challenge: str
    expires_at: float
    tenant: str = ""


class LocalIssuer:
    def __init__(self, port: int = 0, clients: dict[str, str] | None = None, tenant_claim: str = "") -> None:
        self.clients = clients
        """client id -> secret for the authorization-code grant; None: any client, no secret."""
        self.tenant_claim = tenant_claim
        """The claim the signed-in user's tenant goes into (ID and access token); empty: none asked."""
        self._codes: dict[str, IssuedCode] = {}
        self._codes_lock = threading.Lock()
        self.logins = 0
        """Sign-ins completed on the login page (tests count the upstream round trips)."""
        self._keys: dict[str, rsa.RSAPrivateKey] = {}
        self.published: list[str] = []
        """kids served in the JWKS; a key can sign before it is published (rotation tests)."""
        self.jwks_requests = 0
        self.current_kid = self.add_key()
        self._server = ThreadingHTTPServer((LOOPBACK, port), _handler(self))
        self.port = self._server.server_address[1]
        self.issuer = f"http://{LOOPBACK}:{self.port}"
        # A short poll interval: stop() waits for the serving loop to notice, once per test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="oauth-issuer", daemon=True
        )

    def start(self) -> LocalIssuer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add_key(self, *, publish: bool = True) -> str:
        kid = uuid.uuid4().hex[:16]
        self._keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if publish:
            self.published.append(kid)
        return kid

    def publish(self, kid: str) -> None:
        self.published.append(kid)

    def public_pem(self, kid: str | None = None) -> bytes:
        key = self._keys[kid or self.current_kid].public_key()
        return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid in self.published:
            jwk = RSAAlgorithm.to_jwk(self._keys[kid].public_key(), as_dict=True)
            keys.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": keys}

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "jwks_uri": f"{self.issuer}/jwks",
            "token_endpoint": f"{self.issuer}/token",
            "authorization_endpoint": f"{self.issuer}/authorize",
            "grant_types_supported": ["client_credentials", "authorization_code"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "response_types_supported": ["code", "token"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["openid"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "subject_types_supported": ["public"],
        }

    def mint(
        self,
        subject: str,
        audience: str | list[str] | None,
        scopes: tuple[str, ...] | list[str] = (),
        *,
        expires_in: int = 600,
        not_before: float | None = None,
        issuer: str | None = None,
        kid: str | None = None,
        claims: dict[str, Any] | None = None,
    ) -> str:
        now = int(time.time())
        payload: dict[str, Any] = {"iss": issuer or self.issuer, "sub": subject, "iat": now, "exp": now + expires_in}
        payload["jti"] = secrets.token_hex(8)
        if audience is not None:
            payload["aud"] = audience
        if scopes:
            payload["scope"] = " ".join(scopes)
        if not_before is not None:
            payload["nbf"] = int(not_before)
        payload.update(claims or {})
        signer = kid or self.current_kid
        headers = {"kid": signer, "typ": "at+jwt"}
        return jwt.encode(payload, self._keys[signer], algorithm="RS256", headers=headers)

    def id_token(self, subject: str, client_id: str, lifetime: int = 600, extra: dict[str, Any] | None = None) -> str:
        now = int(time.time())
        standard = {"iss": self.issuer, "sub": subject, "aud": client_id, "iat": now, "exp": now + lifetime}
        claims = {**(extra or {}), **standard}
        return jwt.encode(claims, self._keys[self.current_kid], algorithm="RS256", headers={"kid": self.current_kid})

    # -- the authorization-code grant (the facade's upstream in make dev) ---------------------------
    def check_authorization(self, query: dict[str, str]) -> str | None:
        """Why this authorization request is refused, or None."""
        if query.get("response_type") != "code":
            return "response_type must be code"
        client_id, redirect_uri = query.get("client_id", ""), query.get("redirect_uri", "")
        if self.clients is not None and client_id not in self.clients:
            return "unknown client"
        parts = urlsplit(redirect_uri)
        if parts.scheme != "https" and not (parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost")):
            return "redirect_uri must be https or loopback http"
        if query.get("code_challenge") and query.get("code_challenge_method") != "S256":
            return "code_challenge_method must be S256"
        return None

    def issue_code(self, query: dict[str, str]) -> str:
        code = secrets.token_urlsafe(24)
        with self._codes_lock:
            self._codes[code] = IssuedCode(
                query["client_id"],
                query["redirect_uri"],
                query.get("code_challenge", ""),
                time.time() + CODE_SECONDS,
                tenant=query.get("tenant", "").strip() if self.tenant_claim else "",
            )
            self.logins += 1
        return code

    def redeem(self, form: dict[str, str], basic: tuple[str, str] | None) -> tuple[int, dict[str, Any]]:
        client_id, secret = basic if basic is not None else (form.get("client_id", ""), form.get("client_secret"))
        if self.clients is not None and not hmac.compare_digest(self.clients.get(client_id, "\0"), secret or ""):
            return 401, {"error": "invalid_client"}
        with self._codes_lock:
            issued = self._codes.pop(form.get("code", ""), None)  # one-time
        if issued is None or issued.expires_at < time.time() or issued.client_id != client_id:
            return 400, {"error": "invalid_grant"}
        if form.get("redirect_uri") != issued.redirect_uri:
            return 400, {"error": "invalid_grant", "error_description": "redirect_uri mismatch"}
        if issued.code_challenge:
            digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != issued.code_challenge:
                return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
        tenant = {self.tenant_claim: issued.tenant} if issued.tenant else {}
        return 200, {
            "access_token": self.mint(DEV_USER, None, ("openid",), claims={"client_id": client_id, **tenant}),
            "id_token": self.id_token(DEV_USER, client_id, extra=tenant),
            "token_type": "Bearer",
            "expires_in": 600,
        }


def login_page(query: dict[str, str], tenant_claim: str = "") -> str:
    fields = "".join(
        f"<input type='hidden' name='{html.escape(name)}' value='{html.escape(value)}'>"
        for name, value in query.items()
        if name != "tenant"
    )
    if tenant_claim:
        fields += (
            f"<p><label>Tenant (the {html.escape(tenant_claim)} claim; empty: none) "
            f"<input type='text' name='tenant' value='{DEV_TENANT}'></label></p>"
        )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Local sign-in</title></head><body>"
        "<h1>Local development issuer</h1>"
        f"<p>Sign in as the development user <b>{DEV_USER}</b> (no password: loopback only).</p>"
        f"<form method='post' action='/authorize'>{fields}<button type='submit'>Sign in</button></form>"
        "</body></html>"
    )


def _single(raw: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(raw, keep_blank_values=True).items()}


def _handler(issuer: LocalIssuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path, _, query = self.path.partition("?")
            if path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
                self._json(200, issuer.metadata())
            elif path == "/jwks":
                issuer.jwks_requests += 1
                self._json(200, issuer.jwks())
            elif path == "/authorize":
                params = _single(query)
                refused = issuer.check_authorization(params)
                if refused is not None:
                    self._json(400, {"error": "invalid_request", "error_description": refused})
                else:
                    self._html(200, login_page(params, issuer.tenant_claim))
            else:
                self._json(404, {"error": "not_found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            form = _single(self.rfile.read(length).decode())
            if self.path == "/authorize":
                refused = issuer.check_authorization(form)
                if refused is not None:
                    self._json(400, {"error": "invalid_request", "error_description": refused})
                    return
                answer = {"code": issuer.issue_code(form), **({"state": form["state"]} if form.get("state") else {})}
                separator = "&" if "?" in form["redirect_uri"] else "?"
                self.send_response(302)
                self.send_header("location", f"{form['redirect_uri']}{separator}{urlencode(answer)}")
                self.send_header("content-length", "0")
                self.end_headers()
                return
            if self.path != "/token":
                self._json(404, {"error": "not_found"})
                return
            if form.get("grant_type") == "authorization_code":
                status, body = issuer.redeem(form, _basic(self.headers.get("authorization", "")))
                self._json(status, body)
                return
            basic = _basic(self.headers.get("authorization", ""))
            client_id = basic[0] if basic is not None else form.get("client_id", "")
            if form.get("grant_type") != "client_credentials" or not client_id:
                self._json(400, {"error": "unsupported_grant_type"})
                return
            secret = basic[1] if basic is not None else form.get("client_secret", "")
            if issuer.clients is not None and not hmac.compare_digest(issuer.clients.get(client_id, "\0"), secret):
                self._json(401, {"error": "invalid_client"})
                return
            form["client_id"] = client_id
            scopes = form.get("scope", "").split()
            token = issuer.mint(form["client_id"], form.get("resource"), scopes)
            self._json(
                200, {"access_token": token, "token_type": "Bearer", "expires_in": 600, "scope": " ".join(scopes)}
            )

        def _html(self, status: int, page: str) -> None:
            payload = page.encode()
            self.send_response(status)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _json(self, status: int, body: dict[str, Any]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: request lines would carry tokens' paths and drown the dev output."""

    return Handler


def _basic(value: str) -> tuple[str, str] | None:
    scheme, _, encoded = value.partition(" ")
    if scheme.lower() != "basic":
        return None
    client_id, _, secret = base64.b64decode(encoded.strip()).decode().partition(":")
    return unquote(client_id), unquote(secret)


@contextlib.contextmanager
def running_issuer(
    port: int = 0, clients: dict[str, str] | None = None, tenant_claim: str = ""
) -> Iterator[LocalIssuer]:
    issuer = LocalIssuer(port, clients, tenant_claim).start()
    try:
        yield issuer
    finally:
        issuer.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local.oauth_issuer", description=__doc__)
    parser.add_argument("--port", type=int, default=9400)
    parser.add_argument("--audience", default="http://127.0.0.1:8000/mcp", help="aud of the printed token")
    parser.add_argument("--subject", default="local-developer")
    parser.add_argument("--scope", default="", help="space-separated scopes of the printed token")
    parser.add_argument("--hours", type=float, default=8.0, help="lifetime of the printed token")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with running_issuer(args.port) as issuer:
        token = issuer.mint(args.subject, args.audience, args.scope.split(), expires_in=int(args.hours * 3600))
        print(f"Local OAuth issuer  {issuer.issuer}   (JWKS {issuer.issuer}/jwks, keys new every start)")
        print(f"Access token for {args.subject}, aud {args.audience} (printed for local use only):\n{token}\n")
        print(f"Run the platform:  MCP_AUTH=oauth MCP_OAUTH_ISSUER={issuer.issuer} make dev", flush=True)
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
