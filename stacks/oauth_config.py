"""CDK context of OAuth 2.1 resource-server mode: which keys, their defaults, and their checks.

The keys mirror the function's variables (``oauth_issuer`` is ``MCP_OAUTH_ISSUER``, ...). Synth
fails on a combination the function would refuse or could not serve:

- ``oauth`` with ``dax=true``: the DAX VPC has isolated subnets only (no NAT), so the endpoint
  could not reach the issuer's keys; run OAuth with ``dax=false`` (endpoint outside any VPC).
- an issuer, audience or JWKS URL that is not https (loopback http is for ``make dev`` only).
- ``oauth_cognito`` together with ``oauth_issuer`` (the user pool *is* the issuer), or without
  ``oauth`` in ``auth_mode``; OAuth keys set while ``auth_mode`` has no ``oauth``.
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
CALLBACK_PATTERN = re.compile(r"^(https://[^\s#]+|http://localhost(:\d{1,5})?(/[^\s#]*)?)$")

SETTING_KEYS = ("oauth_issuer", "oauth_audience", "oauth_scopes", "oauth_jwks_url", "oauth_client_ids")

OAUTH_DEFAULTS: dict[str, Any] = {
    "oauth_issuer": "",
    "oauth_audience": "",  # "" = the Function URL, derived per request (mcp_platform/auth/resource.py)
    "oauth_scopes": "",
    "oauth_jwks_url": "",
    "oauth_client_ids": [],
    "oauth_cognito": False,
    "oauth_cognito_callback_urls": list(DEFAULT_CALLBACK_URLS),
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
    issuer = _https(raw, "oauth_issuer", fail)
    oauth = "oauth" in modes
    if not oauth:
        configured = [key for key in SETTING_KEYS if raw(key) not in ("", None, [], ())]
        configured += ["oauth_cognito"] if cognito else []
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
    return {
        "auth_mode": auth_mode,
        "oauth_issuer": issuer,
        "oauth_audience": _https(raw, "oauth_audience", fail),
        "oauth_scopes": scopes,
        "oauth_jwks_url": _https(raw, "oauth_jwks_url", fail),
        "oauth_client_ids": _list(raw("oauth_client_ids"), "oauth_client_ids", fail),
        "oauth_cognito": cognito,
        "oauth_cognito_callback_urls": callbacks,
    }


def _https(raw: Callable[[str], Any], key: str, fail: Callable[[str, str, Any], Exception]) -> str:
    value = raw(key)
    if value in ("", None):
        return ""
    parts = urlsplit(str(value))
    if parts.scheme != "https" or not parts.hostname or parts.fragment:
        raise fail(key, "an absolute https URL", value)
    return str(value)


def _bool(value: Any, fail: Callable[[str, str, Any], Exception]) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise fail("oauth_cognito", "true or false", value)
    return text == "true"


def _list(value: Any, key: str, fail: Callable[[str, str, Any], Exception], separator: str = ",") -> tuple[str, ...]:
    items = value.split(separator) if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise fail(key, f"a list (or a {'space' if separator == ' ' else 'comma'}-separated string)", value)
    return tuple(dict.fromkeys(str(item).strip() for item in items if str(item).strip()))
