"""The OAuth facade in tests: its secrets on a moto stack, the development issuer as its upstream,
instances behind one origin (a round-robin proxy: every step may land on another instance),
and a client's side of a sign-in (PKCE, registration)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from local.conformance.proxy import RoundRobinProxy
from local.oauth_browser import ScriptedBrowser
from local.oauth_issuer import LocalIssuer
from tests.support.endpoint import AwsStack, Instance, endpoint_instance
from tests.support.servers import serve

UPSTREAM_CLIENT_ID = "facade-upstream"
SCOPE = "mcp:tools"
REDIRECT_URI = "http://127.0.0.1:33418/callback"  # the client's; nothing listens: the browser stops there


def facade_secrets(aws: AwsStack, upstream_secret: str) -> tuple[str, str]:
    """(keys secret ARN, upstream client secret ARN) on the stack's Secrets Manager."""
    suffix = uuid.uuid4().hex[:8]
    manager = aws.client("secretsmanager")
    keys = json.dumps({"current": "k1", "k1": secrets.token_urlsafe(48)})
    keys_arn = manager.create_secret(Name=f"facade-keys-{suffix}", SecretString=keys)["ARN"]
    upstream = json.dumps({"client_id": UPSTREAM_CLIENT_ID, "client_secret": upstream_secret})
    upstream_arn = manager.create_secret(Name=f"facade-upstream-{suffix}", SecretString=upstream)["ARN"]
    return keys_arn, upstream_arn


def facade_env(issuer: LocalIssuer, keys_arn: str, upstream_arn: str, **more: str) -> dict[str, str]:
    return {
        "MCP_AUTH": "oauth",
        "MCP_OAUTH_ISSUER": issuer.issuer,
        "MCP_OAUTH_SCOPES": SCOPE,
        "MCP_OAUTH_FACADE": "true",
        "MCP_OAUTH_FACADE_KEYS_SECRET": keys_arn,
        "MCP_OAUTH_UPSTREAM_CLIENT_SECRET": upstream_arn,
        **more,
    }


@dataclass
class Origin:
    """Instances behind one round-robin origin, as behind one Function URL."""

    base: str
    proxy: RoundRobinProxy
    instances: list[Instance]

    @property
    def mcp(self) -> str:
        return f"{self.base}/mcp"


@contextlib.contextmanager
def facade_origin(
    aws: AwsStack, env: dict[str, str], count: int = 2, clients: list[Any] | None = None, **options: Any
) -> Iterator[Origin]:
    """``clients``: each instance's own DynamoDB client (e.g. with fault-injecting hooks)."""
    with contextlib.ExitStack() as stack:
        instances = [
            stack.enter_context(endpoint_instance(aws, dynamodb=clients[index] if clients else None, **options, **env))
            for index in range(count)
        ]
        proxy = RoundRobinProxy([instance.url.removesuffix("/mcp") for instance in instances])
        base = stack.enter_context(serve(proxy))
        yield Origin(base, proxy, instances)


@dataclass
class Pkce:
    verifier: str = field(default_factory=lambda: secrets.token_urlsafe(48))

    @property
    def challenge(self) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(self.verifier.encode()).digest()).rstrip(b"=").decode()


def register(base: str, redirect_uris: list[str] | None = None, **metadata: Any) -> dict[str, Any]:
    body = {"client_name": "Test client", "redirect_uris": redirect_uris or [REDIRECT_URI], **metadata}
    response = httpx.post(f"{base}/register", json=body)
    assert response.status_code == 201, response.text
    registered: dict[str, Any] = response.json()
    return registered


def authorize_url(base: str, client_id: str, pkce: Pkce, **params: str) -> str:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "code_challenge": pkce.challenge,
        "code_challenge_method": "S256",
        "state": "state-123",
        "scope": SCOPE,
        "resource": f"{base}/mcp",
        **params,
    }
    return f"{base}/authorize?{urlencode(query)}"


def query_of(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def sign_in(base: str, client_id: str, pkce: Pkce, **params: str) -> dict[str, str]:
    """Authorize in a scripted browser; the parameters the client's redirect URI received."""
    return query_of(ScriptedBrowser().sign_in(authorize_url(base, client_id, pkce, **params), REDIRECT_URI))


def redeem(base: str, client_id: str, code: str, pkce: Pkce, **more: str) -> httpx.Response:
    form = {
        "grant_type": "authorization_code",
        "client_id": client_id,
        "code": code,
        "code_verifier": pkce.verifier,
        "redirect_uri": REDIRECT_URI,
        "resource": f"{base}/mcp",
        **more,
    }
    return httpx.post(f"{base}/token", data=form)
