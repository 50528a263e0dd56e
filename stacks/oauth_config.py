"""CDK context of OAuth 2.1 resource-server mode: which keys, their defaults, and their checks.

The keys mirror the function's variables (``oauth_issuer`` is ``MCP_OAUTH_ISSUER``, ...). Synth
fails on a combination the function would refuse or could not serve:

- ``oauth`` with ``dax=true``: the DAX VPC has isolated subnets only (no NAT), so the endpoint
  could not reach the issuer's keys; run OAuth with ``dax=false`` (endpoint outside any VPC).
- an issuer, audience or JWKS URL that is not https (loopback http is for ``make dev`` only).
- ``oauth_cognito`` together with ``oauth_issuer`` (the user pool *is* the issuer), or without
  ``oauth`` in ``auth_mode``; OAuth keys set while ``auth_mode`` has no ``oauth``.
- ``oauth_facade`` (the authorization-server facade, mcp_platform/authorization_server/; on by default
  with ``oauth_cognito``) in front of another issuer without ``oauth_upstream_client_secret``
  (the facade's client there: a Secrets Manager secret you create, ARN or name);
  ``oauth_machine_client`` (a Cognito app client for the client_credentials grant) without
  ``oauth_cognito``; ``oauth_upstream_scopes`` without ``openid``.
- ``oauth_tenant_claim`` that is not a claim name, or, with ``oauth_cognito``, a ``custom:``
  claim whose attribute name Cognito would refuse (the user pool gets that attribute).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

CLOUD_AUTH_MODES = ("api_key", "oauth", "api_key,oauth")
# The Cognito resource server's identifier: its scopes are named "mcp/<name>" in tokens.
COGNITO_RESOURCE_SERVER = "mcp"
COGNITO_DEFAULT_SCOPES = ("mcp/tools",)
# The MCP Inspector's OAuth callback (its web UI); other clients' callbacks are added by context.
DEFAULT_CALLBACK_URLS = ("http://localhost:6274/oauth/callback",)
SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
CLAIM_NAME = re.compile(r"[\x21-\x7e]{1,256}")
COGNITO_CUSTOM_PREFIX = "custom:"  # a Cognito user pool's custom attribute, as its tokens name it
COGNITO_CUSTOM_NAME = re.compile(r"[A-Za-z0-9_-]{1,20}")
CALLBACK_PATTERN = re.compile(r"^(https://[^\s#]+|http://localhost(:\d{1,5})?(/[^\s#]*)?)$")

SETTING_KEYS = (
    "oauth_issuer",
    "oauth_audience",
    "oauth_scopes",
    "oauth_jwks_url",
    "oauth_client_ids",
    "oauth_upstream_client_secret",
    "oauth_tenant_claim",
)
SECRET_REFERENCE = re.compile(r"^(arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:)?[A-Za-z0-9/_+=.@-]{1,512}$")

OAUTH_DEFAULTS: dict[str, Any] = {
    "oauth_issuer": "",
    "oauth_audience": "",  # "" = the Function URL, derived per request (mcp_platform/application/auth/resource.py)
    "oauth_scopes": "",
    "oauth_jwks_url": "",
    "oauth_client_ids": [],
    "oauth_cognito": False,
    "oauth_cognito_callback_urls": list(DEFAULT_CALLBACK_URLS),
    "oauth_facade": None,  # None: on with oauth_cognito, off otherwise
    "oauth_upstream_client_secret": "",
    "oauth_upstream_scopes": "openid",
    "oauth_machine_client": False,
    "oauth_tenant_claim": "",
}


def oauth_context(
    raw: Callable[[str], Any], fail: Callable[[str, str, Any], Exception], *, dax: bool
) -> dict[str, Any]:
    """The validated OAuth fields of PlatformConfig (``auth_mode`` included, normalised)."""
    given = str(raw("auth_mode"))
    modes = {part.strip() for part in given.split(",") if part.strip()}
    auth_mode = ",".join(mode for mode in ("api_key", "oauth") if mode in modes)
    if auth_mode not in CLOUD_AUTH_MODES or len(modes) != auth_mode.count(",") + 1:
        raise fail("auth_mode", "one of " + ", ".join(CLOUD_AUTH_MODES), given)
    cognito = _bool(raw("oauth_cognito"), fail)
    machine_client = _bool(raw("oauth_machine_client"), fail, "oauth_machine_client")
    facade_setting = raw("oauth_facade")
    facade = cognito if facade_setting is None else _bool(facade_setting, fail, "oauth_facade")
    issuer = _https(raw, "oauth_issuer", fail)
    oauth = "oauth" in modes
    if not oauth:
        configured = [key for key in SETTING_KEYS if raw(key) not in ("", None, [], ())]
        configured += ["oauth_cognito"] if cognito else []
        configured += ["oauth_machine_client"] if machine_client else []
        configured += ["oauth_facade"] if facade_setting is not None and facade else []
        if configured:
            raise fail(configured[0], "unset unless auth_mode includes oauth", raw(configured[0]))
    elif dax:
        raise fail(
            "auth_mode", "api_key when dax=true (the VPC has no route to the issuer's keys: set dax=false)", given
        )
    elif cognito and issuer:
        raise fail("oauth_issuer", "unset with oauth_cognito=true (the user pool is the issuer)", issuer)
    elif not cognito and not issuer:
        raise fail("oauth_issuer", "an https issuer URL when auth_mode includes oauth (or oauth_cognito=true)", "")
    scopes = _list(raw("oauth_scopes"), "oauth_scopes", fail, separator=" ")
    if cognito:
        scopes = scopes or COGNITO_DEFAULT_SCOPES
        prefix = COGNITO_RESOURCE_SERVER + "/"
        if not all(scope.startswith(prefix) and len(scope) > len(prefix) for scope in scopes):
            raise fail("oauth_scopes", f"scopes named {prefix}<name> with oauth_cognito=true", " ".join(scopes))
    if not all(SCOPE_TOKEN.fullmatch(scope) for scope in scopes):
        raise fail("oauth_scopes", "space-separated scope tokens", " ".join(scopes))
    callbacks = _list(raw("oauth_cognito_callback_urls"), "oauth_cognito_callback_urls", fail)
    if not all(CALLBACK_PATTERN.fullmatch(url) for url in callbacks) or (cognito and not callbacks):
        raise fail("oauth_cognito_callback_urls", "https URLs (or http://localhost...)", callbacks)
    upstream_secret = str(raw("oauth_upstream_client_secret") or "")
    if upstream_secret and not SECRET_REFERENCE.fullmatch(upstream_secret):
        raise fail("oauth_upstream_client_secret", "a Secrets Manager secret name or ARN", upstream_secret)
    if oauth and facade and not cognito and not upstream_secret:
        raise fail(
            "oauth_upstream_client_secret",
            'a secret holding {"client_id", "client_secret"} of the facade at oauth_issuer (or oauth_facade=false)',
            "",
        )
    if machine_client and not cognito:
        raise fail("oauth_machine_client", "false unless oauth_cognito=true (it is a Cognito app client)", True)
    tenant_claim = str(raw("oauth_tenant_claim") or "").strip()
    if tenant_claim and not CLAIM_NAME.fullmatch(tenant_claim):
        raise fail("oauth_tenant_claim", "a claim name (1-256 printable characters, no spaces)", tenant_claim)
    custom = tenant_claim.removeprefix(COGNITO_CUSTOM_PREFIX)
    if cognito and custom != tenant_claim and not COGNITO_CUSTOM_NAME.fullmatch(custom):
        raise fail("oauth_tenant_claim", "custom:<1-20 letters, digits, '_' or '-'> with oauth_cognito", tenant_claim)
    upstream_scopes = _list(raw("oauth_upstream_scopes"), "oauth_upstream_scopes", fail, separator=" ")
    if "openid" not in upstream_scopes or not all(SCOPE_TOKEN.fullmatch(scope) for scope in upstream_scopes):
        raise fail("oauth_upstream_scopes", "space-separated scopes including openid", " ".join(upstream_scopes))
    return {
        "auth_mode": auth_mode,
        "oauth_issuer": issuer,
        "oauth_audience": _https(raw, "oauth_audience", fail),
        "oauth_scopes": scopes,
        "oauth_jwks_url": _https(raw, "oauth_jwks_url", fail),
        "oauth_client_ids": _list(raw("oauth_client_ids"), "oauth_client_ids", fail),
        "oauth_cognito": cognito,
        "oauth_cognito_callback_urls": callbacks,
        "oauth_facade": oauth and facade,
        "oauth_upstream_client_secret": upstream_secret,
        "oauth_upstream_scopes": upstream_scopes,
        "oauth_tenant_claim": tenant_claim,
        "oauth_machine_client": machine_client,
    }


def _https(raw: Callable[[str], Any], key: str, fail: Callable[[str, str, Any], Exception]) -> str:
    value = raw(key)
    if value in ("", None):
        return ""
    parts = urlsplit(str(value))
    if parts.scheme != "https" or not parts.hostname or parts.fragment:
        raise fail(key, "an absolute https URL", value)
    return str(value)


def _bool(value: Any, fail: Callable[[str, str, Any], Exception], key: str = "oauth_cognito") -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise fail(key, "true or false", value)
    return text == "true"


def _list(value: Any, key: str, fail: Callable[[str, str, Any], Exception], separator: str = ",") -> tuple[str, ...]:
    items = value.split(separator) if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise fail(key, f"a list (or a {'space' if separator == ' ' else 'comma'}-separated string)", value)
    return tuple(dict.fromkeys(str(item).strip() for item in items if str(item).strip()))
