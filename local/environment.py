"""The environment each function gets locally: the template's variables, resolved, plus local values.

Variable names and values come from the synthesized template (what the stacks set), with Ref /
GetAtt resolved against the emulator; then the few things that differ on one machine.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from local.bootstrap import LocalOptions
from local.intrinsics import resolve
from local.resources import FunctionSpec
from mcp_platform.config import EnvVars
from mcp_platform.transport.security import loopback_hosts

# The Web Adapter's own settings: locally uvicorn is started directly, nothing reads these.
_ADAPTER_ONLY = ("AWS_LAMBDA_EXEC_WRAPPER", "AWS_LWA_")
# Where the MCP Inspector's web UI runs, so a browser-based inspection passes Origin checks.
# OAuth settings a developer gives `make dev` (e.g. the local issuer's URL) win over the template's.
OAUTH_VARIABLES = (
    EnvVars.OAUTH_ISSUER,
    EnvVars.OAUTH_AUDIENCE,
    EnvVars.OAUTH_SCOPES,
    EnvVars.OAUTH_JWKS_URL,
    EnvVars.OAUTH_CLIENT_IDS,
    EnvVars.OAUTH_TENANT_CLAIM,
    EnvVars.OAUTH_FACADE,
    EnvVars.OAUTH_UPSTREAM_CLIENT_SECRET,
    EnvVars.OAUTH_UPSTREAM_SCOPES,
    EnvVars.OAUTH_FACADE_TOKEN_SECONDS,
    EnvVars.OAUTH_FACADE_REFRESH_SECONDS,
    EnvVars.OAUTH_FACADE_CLIENT_SECONDS,
)
INSPECTOR_ORIGINS = ("http://localhost:6274", "http://127.0.0.1:6274")


def function_environment(
    spec: FunctionSpec, attributes: dict[str, dict[str, str]], options: LocalOptions
) -> dict[str, str]:
    env = {
        name: _text(resolve(value, attributes, options.region))
        for name, value in spec.environment.items()
        if not name.startswith(_ADAPTER_ONLY)
    }
    env.update(
        {
            EnvVars.REGION: options.region,
            EnvVars.AWS_ENDPOINT_URL: options.aws_endpoint,
            EnvVars.DAX_ENDPOINT: "",  # X5: no DAX emulator exists; the same code talks to the table
        }
    )
    return env


def endpoint_environment(
    spec: FunctionSpec, attributes: dict[str, dict[str, str]], options: LocalOptions
) -> dict[str, str]:
    env = function_environment(spec, attributes, options)
    # Host/Origin checks as on AWS, with the loopback names this server answers to.
    env[EnvVars.ALLOWED_HOSTS] = os.environ.get(EnvVars.ALLOWED_HOSTS) or ",".join(loopback_hosts(options.mcp_port))
    origins = [o for o in env.get(EnvVars.ALLOWED_ORIGINS, "").split(",") if o]
    env[EnvVars.ALLOWED_ORIGINS] = os.environ.get(EnvVars.ALLOWED_ORIGINS) or ",".join([*origins, *INSPECTOR_ORIGINS])
    if options.auth_mode:
        env[EnvVars.AUTH_MODE] = options.auth_mode  # "none" is refused off loopback by build_app
    env.update({name: os.environ[name] for name in OAUTH_VARIABLES if os.environ.get(name)})
    if os.environ.get(EnvVars.POLICIES_DIR):  # the app's own folder otherwise (beside its features)
        env[EnvVars.POLICIES_DIR] = str(Path(os.environ[EnvVars.POLICIES_DIR]).expanduser().resolve())
    return env


def _text(value: Any) -> str:
    if isinstance(value, dict | list):
        raise ValueError(f"an environment value resolved to a structure, not a string: {value!r}")
    return str(value)
