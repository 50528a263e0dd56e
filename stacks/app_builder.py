"""Builds the CDK app: cdk.json context, validated configuration, the stack, cdk-nag."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The stacks read table keys and env var names from the domain package (one contract).
_DOMAIN = str(ROOT / "layers" / "platform" / "python")
if _DOMAIN not in sys.path:
    sys.path.insert(0, _DOMAIN)

import aws_cdk as cdk  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from stacks.config import PlatformConfig  # noqa: E402
from stacks.nag import acknowledge  # noqa: E402
from stacks.platform_stack import PlatformStack  # noqa: E402

STACK_NAME_PREFIX = "McpPlatform"


def cdk_json_context() -> dict[str, Any]:
    """cdk.json's context: the CLI passes it itself, plain `python app.py` and tests do not."""
    context: dict[str, Any] = json.loads((ROOT / "cdk.json").read_text()).get("context", {})
    return context


def build_app(
    context: dict[str, Any] | None = None, *, nag: bool = True, outdir: str | None = None
) -> tuple[cdk.App, PlatformStack]:
    """The app with one platform stack; ``context`` overrides cdk.json (CLI -c still wins)."""
    app = cdk.App(context={**cdk_json_context(), **(context or {})}, outdir=outdir)
    config = PlatformConfig.from_context(app.node.try_get_context)
    stack = PlatformStack(
        app,
        f"{STACK_NAME_PREFIX}-{config.stage}",
        config=config,
        description=f"Serverless MCP server platform ({config.stage})",
    )
    acknowledge(stack)  # each finding the design accepts, with its reason
    if nag:
        # Synth fails (ValidationFailed) on any finding that is not acknowledged with a reason.
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack
