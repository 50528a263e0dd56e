"""``MCP_OAUTH_TENANT_CLAIM`` with ``make dev``'s facade: the development issuer it starts asks the
person for a tenant on its login page and puts it in the ID token under that claim, which is
what the facade reads (prefilled ``local``; empty: a user without one, which the facade refuses)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import urlencode

import boto3
import jwt
import pytest
from moto import mock_aws

from local.bootstrap import LocalOptions
from local.oauth_browser import ScriptedBrowser
from local.oauth_facade import UPSTREAM_CLIENT_ID, UPSTREAM_SECRET, prepare
from local.oauth_issuer import DEV_TENANT, DEV_USER, LocalIssuer
from mcp_platform.config import EnvVars
from tests.support.aws import free_port
from tests.support.facade import query_of

CALLBACK = "http://127.0.0.1:33421/callback"  # the facade's, as far as the issuer knows: nothing listens


@pytest.fixture
def started(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LocalIssuer, str]]:
    port = free_port()
    monkeypatch.setenv("LOCAL_OAUTH_PORT", str(port))
    for name in (EnvVars.OAUTH_ISSUER, EnvVars.OAUTH_FACADE_KEYS_SECRET, EnvVars.OAUTH_UPSTREAM_CLIENT_SECRET):
        monkeypatch.setenv(name, "")  # prepare() exports them: restored after the test
    env = {"MCP_AUTH": "oauth", "MCP_OAUTH_FACADE": "1", EnvVars.OAUTH_TENANT_CLAIM: "custom:tenant"}
    with mock_aws():
        secrets = boto3.client("secretsmanager", region_name="us-east-1")
        issuer = prepare(env, LocalOptions(8000, 4566, "us-east-1", "oauth", "", attach=False), secrets)
        assert issuer is not None
        stored = secrets.get_secret_value(SecretId=UPSTREAM_SECRET)["SecretString"]
        try:
            yield issuer, json.loads(stored)["client_secret"]
        finally:
            issuer.stop()


def sign_in(issuer: LocalIssuer, secret: str, **fields: str) -> dict[str, object]:
    query = {"response_type": "code", "client_id": UPSTREAM_CLIENT_ID, "redirect_uri": CALLBACK, "state": "s"}
    landed = ScriptedBrowser().sign_in(f"{issuer.issuer}/authorize?{urlencode(query)}", CALLBACK, fields=fields)
    form = {"code": query_of(landed)["code"], "redirect_uri": CALLBACK}
    status, body = issuer.redeem(form, (UPSTREAM_CLIENT_ID, secret))
    assert status == 200, body
    claims: dict[str, object] = jwt.decode(str(body["id_token"]), options={"verify_signature": False})
    return claims


def test_make_devs_issuer_signs_the_user_in_with_the_tenant_typed_on_its_login_page(
    started: tuple[LocalIssuer, str],
) -> None:
    issuer, secret = started
    assert issuer.tenant_claim == "custom:tenant"
    assert sign_in(issuer, secret)["custom:tenant"] == DEV_TENANT  # as prefilled
    acme = sign_in(issuer, secret, tenant="acme")
    assert acme["custom:tenant"] == "acme" and acme["sub"] == DEV_USER
    assert "custom:tenant" not in sign_in(issuer, secret, tenant="")
