"""A local OAuth authorization server for development and tests: ``python -m local.oauth_issuer``.

Serves RFC 8414 and OpenID metadata and a JWKS on 127.0.0.1, and mints RS256 access tokens with
keys generated at start (nothing is stored; every start has new keys). Tokens come from
:meth:`LocalIssuer.mint` (tests) or from its token endpoint, which grants ``client_credentials``
to any client without authentication: a development stand-in, bound to loopback only.

    python -m local.oauth_issuer --port 9400 --audience http://127.0.0.1:8000/mcp
    MCP_AUTH=oauth MCP_OAUTH_ISSUER=http://127.0.0.1:9400 make dev
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

LOOPBACK = "127.0.0.1"


class LocalIssuer:
    def __init__(self, port: int = 0) -> None:
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
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["none"],
            "response_types_supported": ["token"],
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


def _handler(issuer: LocalIssuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
                self._json(200, issuer.metadata())
            elif self.path == "/jwks":
                issuer.jwks_requests += 1
                self._json(200, issuer.jwks())
            else:
                self._json(404, {"error": "not_found"})

        def do_POST(self) -> None:
            if self.path != "/token":
                self._json(404, {"error": "not_found"})
                return
            length = int(self.headers.get("content-length") or 0)
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            if form.get("grant_type") != "client_credentials" or not form.get("client_id"):
                self._json(400, {"error": "unsupported_grant_type"})
                return
            scopes = form.get("scope", "").split()
            token = issuer.mint(form["client_id"], form.get("resource"), scopes)
            self._json(
                200, {"access_token": token, "token_type": "Bearer", "expires_in": 600, "scope": " ".join(scopes)}
            )

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


@contextlib.contextmanager
def running_issuer(port: int = 0) -> Iterator[LocalIssuer]:
    issuer = LocalIssuer(port).start()
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
