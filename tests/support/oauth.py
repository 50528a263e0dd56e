"""Tokens no honest issuer mints (``alg: none``, HMAC keyed with the public key), for refusal tests."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims_for(issuer: str, audience: str, subject: str = "mallory", **extra: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": issuer, "aud": audience, "sub": subject, "iat": now, "exp": now + 600, **extra}


def unsigned(claims: dict[str, Any], kid: str) -> str:
    """``alg: none``: no signature at all."""
    header = b64url(json.dumps({"alg": "none", "typ": "JWT", "kid": kid}).encode())
    return f"{header}.{b64url(json.dumps(claims).encode())}."


def hs256_with_public_key(claims: dict[str, Any], kid: str, public_pem: bytes) -> str:
    """The classic confusion attack: HMAC-SHA256 keyed with the issuer's *public* key."""
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    signing_input = f"{header}.{b64url(json.dumps(claims).encode())}"
    signature = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64url(signature)}"
