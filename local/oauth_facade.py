"""``MCP_AUTH=oauth MCP_OAUTH_FACADE=1 make dev``: the OAuth facade on the endpoint's origin, in
front of the development issuer (:mod:`local.oauth_issuer`), which signs in a fixed user.

What CloudFormation and Cognito would provide, made here once per emulator: the facade's signing
seeds (a Secrets Manager secret of the deployed shape) and its upstream client (a secret holding
a client id and a generated secret, which the development issuer is started with). The issuer
runs in the first process on ``LOCAL_OAUTH_PORT`` (default 9400); an attached second endpoint
finds the secrets in the emulator and the issuer on that port. Set ``MCP_OAUTH_ISSUER`` and
``MCP_OAUTH_UPSTREAM_CLIENT_SECRET`` (a secret you created in the emulator) to put the facade in
front of another issuer instead. With ``MCP_OAUTH_TENANT_CLAIM`` the development issuer's login page
asks for the user's tenant and its ID token carries it in that claim.
"""

from __future__ import annotations

import json
import os
import secrets
from typing import TYPE_CHECKING

from local.bootstrap import LOOPBACK, LocalOptions
from mcp_platform.config import EnvVars, facade_enabled

if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient

    from local.oauth_issuer import LocalIssuer

KEYS_SECRET = "mcp-platform-local-oauth-facade-keys"  # noqa: S105 - a secret's name
UPSTREAM_SECRET = "mcp-platform-local-oauth-upstream-client"  # noqa: S105 - a secret's name
UPSTREAM_CLIENT_ID = "mcp-platform-facade"
DEFAULT_ISSUER_PORT = 9400


def issuer_port() -> int:
    raw = os.environ.get("LOCAL_OAUTH_PORT") or str(DEFAULT_ISSUER_PORT)
    if not raw.isdigit() or not 1 <= int(raw) <= 65535:
        raise SystemExit(f"LOCAL_OAUTH_PORT must be a port number, got {raw!r}")
    return int(raw)


def prepare(env: dict[str, str], options: LocalOptions, secretsmanager: SecretsManagerClient) -> LocalIssuer | None:
    """Complete ``env`` for the facade (in place); the development issuer this process started, if any.

    The settings made here are exported to this process too, as a developer would have: the other
    functions run here (ingest, audit, the task worker) read ``MCP_AUTH`` and the issuer as well."""
    if not facade_enabled(env):
        return None
    issuer = _prepare(env, options, secretsmanager)
    for name in (EnvVars.OAUTH_ISSUER, EnvVars.OAUTH_FACADE_KEYS_SECRET, EnvVars.OAUTH_UPSTREAM_CLIENT_SECRET):
        os.environ[name] = env[name]
    return issuer


def _prepare(env: dict[str, str], options: LocalOptions, secretsmanager: SecretsManagerClient) -> LocalIssuer | None:
    if "oauth" not in env.get(EnvVars.AUTH_MODE, "").split(","):
        raise SystemExit(f"{EnvVars.OAUTH_FACADE} needs MCP_AUTH=oauth (or api_key,oauth)")
    env[EnvVars.OAUTH_FACADE_KEYS_SECRET] = _ensure(
        secretsmanager, KEYS_SECRET, {"current": "k1", "k1": secrets.token_urlsafe(48)}
    )
    if env.get(EnvVars.OAUTH_ISSUER):  # another issuer: its client secret is the developer's to give
        if not env.get(EnvVars.OAUTH_UPSTREAM_CLIENT_SECRET):
            raise SystemExit(
                f"with {EnvVars.OAUTH_ISSUER} set, the facade needs {EnvVars.OAUTH_UPSTREAM_CLIENT_SECRET}: a "
                'secret in the emulator holding {"client_id": ..., "client_secret": ...} of its client there'
            )
        return None
    value = {"client_id": UPSTREAM_CLIENT_ID, "client_secret": secrets.token_urlsafe(32)}
    env[EnvVars.OAUTH_UPSTREAM_CLIENT_SECRET] = _ensure(secretsmanager, UPSTREAM_SECRET, value)
    port = issuer_port()
    env[EnvVars.OAUTH_ISSUER] = f"http://{LOOPBACK}:{port}"
    if options.attach:
        return None  # the first process serves the issuer
    from local.oauth_issuer import LocalIssuer  # PyJWT and cryptography: only when the facade is on

    stored = json.loads(secretsmanager.get_secret_value(SecretId=UPSTREAM_SECRET)["SecretString"])
    try:
        return LocalIssuer(
            port,
            clients={stored["client_id"]: stored["client_secret"]},
            tenant_claim=env.get(EnvVars.OAUTH_TENANT_CLAIM, "").strip(),
        ).start()
    except OSError as error:
        raise SystemExit(f"LOCAL_OAUTH_PORT {port} is not free for the development issuer ({error})") from None


def _ensure(secretsmanager: SecretsManagerClient, name: str, value: dict[str, str]) -> str:
    """The secret's ARN; created with ``value`` when the emulator does not hold it yet."""
    try:
        return str(secretsmanager.describe_secret(SecretId=name)["ARN"])
    except secretsmanager.exceptions.ResourceNotFoundException:
        return str(secretsmanager.create_secret(Name=name, SecretString=json.dumps(value))["ARN"])
