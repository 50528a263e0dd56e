"""OAuth 2.1 at synth: auth_mode and OAuth context validation, the function's OAuth variables,
and the optional Cognito user pool (the ``oauth`` template is cdk-nag clean or its fixture fails)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_platform.config import EnvVars
from stacks.config import ContextError, PlatformConfig
from stacks.endpoint import Endpoint
from tests.infra.synth import Synthesized

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

ISSUER = "https://login.example.com/tenant"


def config_from(**context: Any) -> PlatformConfig:
    return PlatformConfig.from_context({"dax": "false", **context}.get)


def endpoint_env(s: Synthesized) -> dict[str, Any]:
    functions = s.resources("AWS::Lambda::Function").values()
    found: dict[str, Any] = next(f for f in functions if f["Properties"]["Handler"] == "run.sh")
    variables: dict[str, Any] = found["Properties"]["Environment"]["Variables"]
    return variables


@pytest.mark.parametrize(("mode", "canonical"), [("oauth", "oauth"), ("oauth,api_key", "api_key,oauth")])
def test_oauth_modes_are_accepted_with_an_https_issuer_and_no_dax(mode: str, canonical: str) -> None:
    config = config_from(auth_mode=mode, oauth_issuer=ISSUER, oauth_scopes="mcp:tools mcp:read")
    assert config.auth_mode == canonical
    assert (config.oauth_issuer, config.oauth_scopes) == (ISSUER, ("mcp:tools", "mcp:read"))
    assert config.oauth_audience == ""  # derived from the Function URL at run time


@pytest.mark.parametrize(
    ("context", "key"),
    [
        ({"auth_mode": "oauth"}, "oauth_issuer"),  # no issuer and no Cognito
        ({"auth_mode": "oauth", "oauth_issuer": "http://login.example.com"}, "oauth_issuer"),
        ({"auth_mode": "oauth", "oauth_issuer": ISSUER, "dax": "true"}, "auth_mode"),  # no route to the keys
        ({"auth_mode": "oauth", "oauth_issuer": ISSUER, "oauth_audience": "mcp"}, "oauth_audience"),
        ({"auth_mode": "oauth", "oauth_issuer": ISSUER, "oauth_jwks_url": "http://k.example"}, "oauth_jwks_url"),
        ({"auth_mode": "oauth", "oauth_issuer": ISSUER, "oauth_scopes": ['a"b']}, "oauth_scopes"),
        ({"auth_mode": "oauth", "oauth_issuer": ISSUER, "oauth_cognito": "true"}, "oauth_issuer"),  # which one?
        ({"auth_mode": "oauth", "oauth_cognito": "true", "oauth_scopes": "tools"}, "oauth_scopes"),  # mcp/<name>
        ({"auth_mode": "oauth", "oauth_cognito": "maybe"}, "oauth_cognito"),
        (
            {"auth_mode": "oauth", "oauth_cognito": "true", "oauth_cognito_callback_urls": "http://x.example/cb"},
            "oauth_cognito_callback_urls",
        ),
        ({"oauth_issuer": ISSUER}, "oauth_issuer"),  # OAuth keys without an OAuth mode
        ({"oauth_cognito": "true"}, "oauth_cognito"),
    ],
)
def test_bad_oauth_context_fails_synth_naming_the_key(context: dict[str, Any], key: str) -> None:
    with pytest.raises(ContextError) as error:
        config_from(**context)
    assert f"'{key}'" in str(error.value) and "must be" in str(error.value)


def test_cognito_option_defaults_to_one_resource_server_scope() -> None:
    config = config_from(auth_mode="oauth", oauth_cognito=True)
    assert config.oauth_cognito and config.oauth_scopes == ("mcp/tools",)
    assert config.oauth_cognito_callback_urls == ("http://localhost:6274/oauth/callback",)


def test_external_issuer_becomes_the_functions_oauth_variables() -> None:
    config = config_from(auth_mode="oauth", oauth_issuer=ISSUER, oauth_scopes="mcp:tools", oauth_client_ids="c1")
    assert Endpoint._oauth_environment(config, None) == {
        EnvVars.OAUTH_ISSUER: ISSUER,
        EnvVars.OAUTH_SCOPES: "mcp:tools",
        EnvVars.OAUTH_CLIENT_IDS: "c1",
    }
    assert Endpoint._oauth_environment(config_from(), None) == {}  # api_key: nothing OAuth at all


def test_api_key_stacks_have_no_oauth_variables_and_no_user_pool(default: Synthesized, alt: Synthesized) -> None:
    for s in (default, alt):
        assert endpoint_env(s)[EnvVars.AUTH_MODE] == "api_key"
        assert not [name for name in endpoint_env(s) if name.startswith("MCP_OAUTH_")]
        assert not s.resources("AWS::Cognito::UserPool")


def test_cognito_user_pool_is_the_endpoints_issuer(oauth: Synthesized) -> None:
    pool_id, pool = next(iter(oauth.resources("AWS::Cognito::UserPool").items()))
    props = pool["Properties"]
    assert props["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True  # no self sign-up
    assert props["MfaConfiguration"] == "ON" and props["EnabledMfas"] == ["SOFTWARE_TOKEN_MFA"]
    env = endpoint_env(oauth)
    assert env[EnvVars.AUTH_MODE] == "api_key,oauth"
    issuer = json.dumps(env[EnvVars.OAUTH_ISSUER])
    assert "https://cognito-idp." in issuer and pool_id in issuer  # the tokens' iss, scheme included
    assert pool_id in json.dumps(env[EnvVars.OAUTH_JWKS_URL]) and "jwks.json" in json.dumps(env[EnvVars.OAUTH_JWKS_URL])
    client_id = next(iter(oauth.resources("AWS::Cognito::UserPoolClient")))
    assert env[EnvVars.OAUTH_CLIENT_IDS] == {"Ref": client_id}  # Cognito access tokens carry no aud
    assert env[EnvVars.OAUTH_SCOPES] == "mcp/tools mcp/admin"
    assert EnvVars.OAUTH_AUDIENCE not in env  # derived from the Function URL at run time


def test_cognito_resource_server_and_public_pkce_client(oauth: Synthesized) -> None:
    server = oauth.one("AWS::Cognito::UserPoolResourceServer")["Properties"]
    assert server["Identifier"] == "mcp"
    assert sorted(scope["ScopeName"] for scope in server["Scopes"]) == ["admin", "tools"]
    client = oauth.one("AWS::Cognito::UserPoolClient")["Properties"]
    assert client["GenerateSecret"] is False  # a public client: MCP clients cannot keep a secret
    assert client["AllowedOAuthFlows"] == ["code"] and client["AllowedOAuthFlowsUserPoolClient"] is True
    assert client["CallbackURLs"] == ["http://localhost:6274/oauth/callback", "https://client.example.com/callback"]
    assert "openid" in client["AllowedOAuthScopes"] and len(client["AllowedOAuthScopes"]) == 3
    assert client["SupportedIdentityProviders"] == ["COGNITO"]
    assert oauth.one("AWS::Cognito::UserPoolDomain")
    outputs = oauth.json["Outputs"]
    assert {"OAuthIssuer", "OAuthClientId", "OAuthSignInDomain"} <= set(outputs)


def test_browser_clients_can_read_the_challenge_through_the_function_url(oauth: Synthesized) -> None:
    cors = oauth.one("AWS::Lambda::Url")["Properties"]["Cors"]
    assert "www-authenticate" in cors["ExposeHeaders"]
    assert "GET" in cors["AllowMethods"]  # the protected-resource metadata
