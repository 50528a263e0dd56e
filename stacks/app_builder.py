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
from stacks.edge_config import CLOUDFRONT_REGION  # noqa: E402
from stacks.edge_globals import EdgeGlobalsStack  # noqa: E402
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
    """The app with the platform stack (and with edge=cloudfront, its us-east-1 stack:
    stacks/edge_globals.py); ``context`` overrides cdk.json (CLI -c still wins)."""
    app = cdk.App(context={**cdk_json_context(), **(context or {})}, outdir=outdir)
    config = PlatformConfig.from_context(app.node.try_get_context)
    name = f"{STACK_NAME_PREFIX}-{config.stage}"
    # Environment-agnostic unless a region is named (edge=cloudfront needs one: cross-region references).
    env = cdk.Environment(region=config.region) if config.region else None
    globals_stack = (
        EdgeGlobalsStack(
            app,
            f"{name}-edge",
            config=config,
            env=cdk.Environment(region=CLOUDFRONT_REGION),
            cross_region_references=True,
            description=f"Serverless MCP platform ({config.stage}): the CloudFront edge's web ACL and certificate",
        )
        if config.edge == "cloudfront"
        else None
    )
    stack = PlatformStack(
        app,
        name,
        config=config,
        env=env,
        cross_region_references=globals_stack is not None,
        web_acl_arn=globals_stack.web_acl.attr_arn if globals_stack is not None else None,
        certificate=globals_stack.certificate if globals_stack is not None else None,
        description=f"Serverless MCP server platform ({config.stage})",
    )
    acknowledge(stack)  # each finding the design accepts, with its reason
    if nag:
        # Synth fails (ValidationFailed) on any finding that is not acknowledged with a reason.
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack
