"""OAuth settings, the protected-resource description, tool scopes and the cold-start import rule."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.adapters.jwks import metadata_urls
from mcp_platform.application.auth.base import Principal
from mcp_platform.application.auth.combined import KeyOrToken
from mcp_platform.application.auth.resource import ProtectedResource, function_url_host
from mcp_platform.config import ConfigError, Settings
from mcp_platform.protocol.tools import tool, tool_spec

ROOT = Path(__file__).resolve().parents[3]
BASE = {"SESSION_TABLE_NAME": "sessions"}
ISSUER = "https://login.example.com/tenant"


def settings(**env: str) -> Settings:
    return Settings.from_mapping({**BASE, **env})


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("api_key", "api_key"),
        ("oauth", "oauth"),
        ("oauth,api_key", "api_key,oauth"),
        (" api_key , oauth ", "api_key,oauth"),
    ],
)
def test_auth_modes_one_or_keys_and_oauth_together(raw: str, canonical: str) -> None:
    parsed = settings(MCP_AUTH=raw, MCP_OAUTH_ISSUER=ISSUER)
    assert parsed.auth_mode == canonical
    assert (parsed.oauth is not None) == ("oauth" in canonical)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"MCP_AUTH": "none,api_key"}, "MCP_AUTH"),  # anonymous next to credentials: refused
        ({"MCP_AUTH": "jwt"}, "MCP_AUTH"),
        ({"MCP_AUTH": "oauth"}, "MCP_OAUTH_ISSUER"),  # required
        ({"MCP_AUTH": "oauth", "MCP_OAUTH_ISSUER": "http://idp.example.com"}, "MCP_OAUTH_ISSUER"),  # clear text
        ({"MCP_AUTH": "oauth", "MCP_OAUTH_ISSUER": "login.example.com"}, "MCP_OAUTH_ISSUER"),
        ({"MCP_AUTH": "oauth", "MCP_OAUTH_ISSUER": ISSUER, "MCP_OAUTH_JWKS_URL": "http://k.example"}, "JWKS"),
        ({"MCP_AUTH": "oauth", "MCP_OAUTH_ISSUER": ISSUER, "MCP_OAUTH_AUDIENCE": "mcp"}, "MCP_OAUTH_AUDIENCE"),
    ],
)
def test_bad_oauth_settings_fail_at_start_naming_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        settings(**env)


def test_oauth_settings_read_scopes_audience_and_client_ids() -> None:
    oauth = settings(
        MCP_AUTH="oauth",
        MCP_OAUTH_ISSUER="http://127.0.0.1:9400",  # http only on loopback
        MCP_OAUTH_AUDIENCE="https://mcp.example.com/mcp",
        MCP_OAUTH_SCOPES="mcp:tools  mcp:read mcp:tools",
        MCP_OAUTH_CLIENT_IDS="a, b",
    ).oauth
    assert oauth is not None
    assert (oauth.audience, oauth.scopes, oauth.client_ids) == (
        "https://mcp.example.com/mcp",
        ("mcp:tools", "mcp:read"),
        ("a", "b"),
    )


def test_resource_identifier_derived_only_for_known_hosts() -> None:
    local = ProtectedResource(issuer=ISSUER)
    assert local.resource_for({"host": "localhost:8000"}) == "http://localhost:8000/mcp"
    assert local.resource_for({"host": "attacker.example"}) is None
    lambda_url = ProtectedResource(issuer=ISSUER, host_pattern=function_url_host("eu-west-1"), scheme="https")
    own = "abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws"
    assert lambda_url.resource_for({"host": own}) == f"https://{own}/mcp"
    assert lambda_url.resource_for({"host": own.replace("eu-west-1", "us-east-1")}) is None
    assert lambda_url.resource_for({"host": "127.0.0.1:8080"}) is None  # not a Function URL
    fixed = ProtectedResource(issuer=ISSUER, audience="https://mcp.example.com/mcp")
    assert fixed.resource_for({"host": "anything"}) == "https://mcp.example.com/mcp"


def test_metadata_document_and_challenges_follow_rfc_9728() -> None:
    resource = ProtectedResource(issuer=ISSUER, required_scopes=("mcp:tools",), scopes_supported=("a", "mcp:tools"))
    identifier = "https://mcp.example.com/mcp"
    assert resource.metadata_url(identifier) == "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    assert resource.document(identifier) == {
        "resource": identifier,
        "authorization_servers": [ISSUER],
        "scopes_supported": ["a", "mcp:tools"],
        "bearer_methods_supported": ["header"],
    }
    challenge = resource.challenge({"host": "127.0.0.1:8000"}, "insufficient_scope", 'say "hi"', ("notes:write",))
    assert challenge == (
        'Bearer resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp", '
        'scope="mcp:tools notes:write", error="insufficient_scope", error_description="say hi"'
    )


def test_issuer_metadata_urls_rfc_8414_then_openid() -> None:
    assert metadata_urls(ISSUER) == (
        "https://login.example.com/.well-known/oauth-authorization-server/tenant",
        "https://login.example.com/tenant/.well-known/openid-configuration",
    )


def test_tool_scopes_are_declared_and_validated() -> None:
    async def write(ctx: object, text: str) -> str:
        return text

    spec = tool_spec(tool(description="w", scopes=["notes:write", "notes:write"])(write))
    assert spec.scopes == ("notes:write",)
    assert tool_spec(tool(description="w")(write)).scopes == ()
    with pytest.raises(TypeError, match="scope tokens"):
        tool(description="w", scopes=['bad "scope"'])(write)
    api_key = Principal("alice", "api_key")
    oauth = Principal("oauth:x#alice", "oauth", frozenset({"notes:read"}))
    assert api_key.lacks(spec.scopes) == () and oauth.lacks(spec.scopes) == ("notes:write",)


def test_api_key_principals_never_take_the_oauth_namespace() -> None:
    store = ApiKeyStore("sessions", client=None)
    with pytest.raises(ValueError, match="oauth:"):
        store.mint("oauth:https://login.example.com/tenant#alice")


def test_combined_mode_routes_keys_and_jwts_to_their_authenticator() -> None:
    seen: list[str] = []

    class Recorder:
        def __init__(self, name: str) -> None:
            self.name = name

        async def authenticate(self, headers: dict[str, str], client_host: str) -> Principal:
            seen.append(self.name)
            return Principal(self.name, self.name)

    both = KeyOrToken(Recorder("api_key"), Recorder("oauth"))  # type: ignore[arg-type]
    for header in ("Bearer mcpk_abc", "Bearer a.b.c", "", "Basic x"):
        asyncio.run(both.authenticate({"authorization": header} if header else {}, "127.0.0.1"))
    assert seen == ["api_key", "oauth", "oauth", "oauth"]  # no or odd credential: the OAuth challenge


OAUTH_MODULES = (
    "jwt",
    "cryptography",
    "mcp_platform.application.auth.oauth",
    "mcp_platform.adapters.jwks",
    "mcp_platform.application.auth.resource",
)


def _modules_after_import(auth: str) -> dict[str, bool]:
    probe = (
        f"MODULES = {OAUTH_MODULES!r}; import json, sys, endpoint_app; "
        "print(json.dumps({m: m in sys.modules for m in MODULES}))"
    )
    env = {
        **os.environ,
        "SESSION_TABLE_NAME": "sessions",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        "MCP_AUTH": auth,
        "MCP_OAUTH_ISSUER": "https://login.example.com/tenant",
        "PYTHONPATH": os.pathsep.join(str(ROOT / p) for p in ("layers/platform/python", "functions/endpoint")),
    }
    env.pop("AWS_LAMBDA_FUNCTION_NAME", None)
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    loaded: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_api_key_stack_never_imports_the_jwt_library_at_cold_start() -> None:
    # Cold start (at most 0.55x the SDK server): PyJWT + cryptography cost 0.1-0.2 s to import.
    assert _modules_after_import("api_key") == dict.fromkeys(OAUTH_MODULES, False)


def test_oauth_stack_loads_the_jwt_library_on_the_first_token_not_at_start() -> None:
    loaded = _modules_after_import("oauth")
    assert loaded["mcp_platform.application.auth.oauth"] and not loaded["jwt"] and not loaded["cryptography"]


def test_discovery_refuses_metadata_of_another_issuer_and_falls_back_to_openid() -> None:
    from mcp_platform.adapters.jwks import IssuerUnavailable, JwksCache

    served = {
        "https://login.example.com/.well-known/oauth-authorization-server/tenant": {
            "issuer": "https://impostor.example",
            "jwks_uri": "https://impostor.example/keys",
        },
        "https://login.example.com/tenant/.well-known/openid-configuration": {
            "issuer": ISSUER,
            "jwks_uri": "https://login.example.com/tenant/keys",
        },
        "https://login.example.com/tenant/keys": {"keys": [{"kty": "RSA", "kid": "k1", "n": "AQAB", "e": "AQAB"}]},
    }
    fetched: list[str] = []

    def fetch(url: str) -> bytes:
        fetched.append(url)
        if url not in served:
            raise OSError(f"404 {url}")
        return json.dumps(served[url]).encode()

    keys = JwksCache(ISSUER, fetch)
    assert asyncio.run(keys.key_for("k1")) == served["https://login.example.com/tenant/keys"]["keys"][0]
    assert keys.jwks_url == "https://login.example.com/tenant/keys" and "https://impostor.example/keys" not in fetched
    served.pop("https://login.example.com/tenant/.well-known/openid-configuration")
    with pytest.raises(IssuerUnavailable, match="issuer mismatch"):
        asyncio.run(JwksCache(ISSUER, fetch).key_for("k1"))
