"""OAuth 2.1 at synth: auth_mode and OAuth context validation, the function's OAuth variables,
and the optional Cognito user pool (the ``oauth`` template is cdk-nag clean or its fixture fails)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_platform.config import EnvVars
from stacks.config import ContextError, PlatformConfig
from stacks.endpoint import Endpoint
from tests.infra.synth import Synthesized, synthesize

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

ISSUER = "https://login.example.com/tenant"


def app_client(s: Synthesized, name: str) -> tuple[str, dict[str, Any]]:
    """(logical id, properties) of the Cognito app client the construct calls ``name``."""
    clients = s.resources("AWS::Cognito::UserPoolClient")
    (logical_id,) = [key for key in clients if key.startswith(f"AuthorizationUserPool{name}")]
    return logical_id, clients[logical_id]["Properties"]


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
        ({"oauth_tenant_claim": "tenant_id"}, "oauth_tenant_claim"),
        ({"auth_mode": "oauth", "oauth_issuer": ISSUER, "oauth_tenant_claim": "tenant id"}, "oauth_tenant_claim"),
        # A Cognito custom attribute the pool could not have
        ({"auth_mode": "oauth", "oauth_cognito": "true", "oauth_tenant_claim": "custom:"}, "oauth_tenant_claim"),
        (
            {"auth_mode": "oauth", "oauth_cognito": "true", "oauth_tenant_claim": "custom:" + "t" * 21},
            "oauth_tenant_claim",
        ),
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


def test_g3_the_tenant_claim_becomes_the_endpoints_variable() -> None:
    config = config_from(auth_mode="oauth", oauth_issuer=ISSUER, oauth_tenant_claim="tenant_id")
    assert Endpoint._oauth_environment(config, None)[EnvVars.OAUTH_TENANT_CLAIM] == "tenant_id"


def test_g3_the_tenant_claim_is_accepted_with_the_facade_and_cognito_gets_it_as_an_immutable_attribute(
    tmp_path: Path,
) -> None:
    # Given Cognito with the facade on (its default) and the ID token's custom:tenant as the claim
    context = {"auth_mode": "oauth", "dax": "false", "oauth_cognito": "true", "oauth_tenant_claim": "custom:tenant"}
    assert config_from(**context).oauth_facade
    other = config_from(
        auth_mode="oauth",
        oauth_issuer=ISSUER,
        oauth_facade="true",
        oauth_upstream_client_secret="my/facade-client",
        oauth_tenant_claim="tenant_id",
    )
    assert other.oauth_facade and other.oauth_tenant_claim == "tenant_id"
    # When it is synthesized
    s = synthesize(tmp_path / "tenants", context)
    # Then the endpoint (facade and resource server) is told the claim
    env = endpoint_env(s)
    assert env[EnvVars.OAUTH_TENANT_CLAIM] == "custom:tenant" and env[EnvVars.OAUTH_FACADE] == "true"
    # and the pool has the attribute, which no user can change (not even their own)
    (pool,) = s.resources("AWS::Cognito::UserPool").values()
    (attribute,) = [a for a in pool["Properties"]["Schema"] if a["Name"] == "tenant"]
    assert attribute["Mutable"] is False and attribute["AttributeDataType"] == "String"
    assert attribute["StringAttributeConstraints"] == {"MinLength": "1", "MaxLength": "64"}


def test_without_a_custom_tenant_claim_the_user_pool_has_no_custom_attribute(oauth: Synthesized) -> None:
    (pool,) = oauth.resources("AWS::Cognito::UserPool").values()
    assert not [a for a in pool["Properties"].get("Schema", []) if a.get("Name") == "tenant"]


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
    public, machine = app_client(oauth, "McpClient")[0], app_client(oauth, "MachineClient")[0]
    # Cognito access tokens carry no aud: the app clients whose tokens are accepted as they are.
    assert env[EnvVars.OAUTH_CLIENT_IDS] == {"Fn::Join": ["", [{"Ref": public}, ",", {"Ref": machine}]]}
    assert env[EnvVars.OAUTH_SCOPES] == "mcp/tools mcp/admin"
    assert EnvVars.OAUTH_AUDIENCE not in env  # derived from the Function URL at run time


def test_cognito_resource_server_and_public_pkce_client(oauth: Synthesized) -> None:
    server = oauth.one("AWS::Cognito::UserPoolResourceServer")["Properties"]
    assert server["Identifier"] == "mcp"
    assert sorted(scope["ScopeName"] for scope in server["Scopes"]) == ["admin", "tools"]
    client = app_client(oauth, "McpClient")[1]
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


# -- the OAuth facade and the machine client ------------------------------------------------------


def test_the_facade_is_on_by_default_with_cognito_and_off_otherwise() -> None:
    assert config_from(auth_mode="oauth", oauth_cognito=True).oauth_facade
    assert not config_from(auth_mode="oauth", oauth_cognito=True, oauth_facade="false").oauth_facade
    assert not config_from(auth_mode="oauth", oauth_issuer=ISSUER).oauth_facade
    assert not config_from().oauth_facade
    other = config_from(
        auth_mode="oauth", oauth_issuer=ISSUER, oauth_facade="true", oauth_upstream_client_secret="my/facade-client"
    )
    assert other.oauth_facade and other.oauth_upstream_client_secret == "my/facade-client"


@pytest.mark.parametrize(
    ("context", "key"),
    [
        ({"auth_mode": "oauth", "oauth_issuer": ISSUER, "oauth_facade": "true"}, "oauth_upstream_client_secret"),
        (
            {
                "auth_mode": "oauth",
                "oauth_issuer": ISSUER,
                "oauth_facade": "true",
                "oauth_upstream_client_secret": "no spaces allowed",
            },
            "oauth_upstream_client_secret",
        ),
        ({"auth_mode": "oauth", "oauth_issuer": ISSUER, "oauth_machine_client": "true"}, "oauth_machine_client"),
        ({"auth_mode": "oauth", "oauth_cognito": "true", "oauth_upstream_scopes": "email"}, "oauth_upstream_scopes"),
        ({"auth_mode": "oauth", "oauth_cognito": "true", "oauth_facade": "sometimes"}, "oauth_facade"),
        ({"oauth_facade": "true"}, "oauth_facade"),  # without an OAuth mode
    ],
)
def test_bad_facade_context_fails_synth_naming_the_key(context: dict[str, Any], key: str) -> None:
    with pytest.raises(ContextError) as error:
        config_from(**context)
    assert f"'{key}'" in str(error.value)


def statements_of(s: Synthesized, function_handler: str) -> list[dict[str, Any]]:
    function = next(
        f for f in s.resources("AWS::Lambda::Function").values() if f["Properties"]["Handler"] == function_handler
    )
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    found: list[dict[str, Any]] = []
    for policy in s.resources("AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    return found


def test_the_facade_signs_users_in_through_its_own_cognito_client_on_the_function_url(oauth: Synthesized) -> None:
    # Its app client: confidential, code grant with openid only, one callback: the facade's on the URL
    _, client = app_client(oauth, "FacadeClient")
    url = next(iter(oauth.resources("AWS::Lambda::Url")))
    assert client["GenerateSecret"] is True and client["AllowedOAuthFlows"] == ["code"]
    assert client["AllowedOAuthScopes"] == ["openid"]
    assert client["CallbackURLs"] == [{"Fn::Join": ["", [{"Fn::GetAtt": [url, "FunctionUrl"]}, "callback"]]}]
    # The function is told the facade's secrets, and its signing seeds are generated, never in the template
    env = endpoint_env(oauth)
    assert env[EnvVars.OAUTH_FACADE] == "true" and env[EnvVars.OAUTH_UPSTREAM_SCOPES] == "openid"
    seeds_id = env[EnvVars.OAUTH_FACADE_KEYS_SECRET]["Ref"]
    seeds = oauth.json["Resources"][seeds_id]["Properties"]
    assert seeds["GenerateSecretString"]["GenerateStringKey"] == "k1" and "SecretString" not in seeds
    # The upstream secret is named from the user pool (no reference from the function: no cycle)
    pool = next(iter(oauth.resources("AWS::Cognito::UserPool")))
    name = {"Fn::Join": ["", ["mcp-platform/oauth-facade-upstream/", {"Ref": pool}]]}
    assert env[EnvVars.OAUTH_UPSTREAM_CLIENT_SECRET] == name
    (upstream,) = [
        v["Properties"]
        for v in oauth.resources("AWS::SecretsManager::Secret").values()
        if v["Properties"].get("Name") == name
    ]
    assert "KmsKeyId" in upstream and "client_secret" in json.dumps(upstream["SecretString"])
    # and granted to the endpoint by that name, read only
    reads = [st for st in statements_of(oauth, "run.sh") if "secretsmanager:GetSecretValue" in st["Action"]]
    by_name = [st for st in reads if "oauth-facade-upstream" in json.dumps(st["Resource"])]
    assert by_name and "-??????" in json.dumps(by_name[0]["Resource"])
    assert any({"Ref": seeds_id} in st["Resource"] for st in reads)


def test_the_machine_client_uses_client_credentials_and_the_extension_is_advertised(oauth: Synthesized) -> None:
    _, machine = app_client(oauth, "MachineClient")
    assert machine["GenerateSecret"] is True and machine["AllowedOAuthFlows"] == ["client_credentials"]
    assert all("openid" not in json.dumps(scope) for scope in machine["AllowedOAuthScopes"])  # resource scopes only
    assert endpoint_env(oauth)[EnvVars.OAUTH_CLIENT_CREDENTIALS] == "true"
    assert "OAuthMachineClientId" in oauth.json["Outputs"]


def test_the_task_worker_is_told_nothing_of_the_facade(oauth: Synthesized) -> None:
    worker = next(
        f
        for f in oauth.resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "task_worker.lambda_handler"
    )
    names = set(worker["Properties"]["Environment"]["Variables"])
    assert not {name for name in names if name.startswith(("MCP_OAUTH_FACADE", "MCP_OAUTH_UPSTREAM_"))}


def test_behind_a_custom_domain_the_facade_callback_on_that_origin_is_registered_too(tmp_path: Path) -> None:
    context = {"auth_mode": "oauth", "dax": "false", "oauth_cognito": "true"}
    s = synthesize(tmp_path / "domain", {**context, "oauth_audience": "https://mcp.example.com/mcp"})
    callbacks = app_client(s, "FacadeClient")[1]["CallbackURLs"]
    assert len(callbacks) == 2 and callbacks[1] == "https://mcp.example.com/callback"


def test_a_facade_in_front_of_another_issuer_reads_the_client_secret_it_is_given(tmp_path: Path) -> None:
    context = {
        "auth_mode": "oauth",
        "dax": "false",
        "oauth_issuer": ISSUER,
        "oauth_facade": "true",
        "oauth_upstream_client_secret": "teams/mcp-facade-client",
    }
    s = synthesize(tmp_path / "generic", context)
    env = endpoint_env(s)
    assert env[EnvVars.OAUTH_UPSTREAM_CLIENT_SECRET] == "teams/mcp-facade-client"
    assert not s.resources("AWS::Cognito::UserPool")
    reads = [st for st in statements_of(s, "run.sh") if "secretsmanager:GetSecretValue" in st["Action"]]
    assert any("secret:teams/mcp-facade-client-??????" in json.dumps(st["Resource"]) for st in reads)
