"""Synthesizes the CDK app in-process, exactly as the tests in tests/infra do.

Nothing is cached: every start synthesizes the current stacks, so the local resources can
never drift from what `cdk deploy` would create.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_platform.config import EnvVars

# Locally the endpoint talks to the table directly (X5: DAX has no emulator), and the layer
# is hashed from its sources instead of bundled, so synth never runs pip. Notification streams
# are on: an open stream costs nothing on one machine, and `make dev` shows every feature.
logger = logging.getLogger(__name__)
LOCAL_CONTEXT: dict[str, Any] = {"dax": "false", "subscriptions": "true", "aws:cdk:bundling-stacks": []}
# Rate limits and quotas, as a deployment sets them with the context keys: `MCP_RATE_LIMITS=... make dev`
# synthesizes the stack with them, so the emulator gets the limits table and the functions the variables.
# LOCAL_PROFILE is the `profile` key (`LOCAL_PROFILE=minimal make dev`: one PROVISIONED shard, no
# fan-out consumer, the ingest mapping reading the stream directly); the local keys above still win.
PROFILE_VARIABLE = "LOCAL_PROFILE"
ENVIRONMENT_CONTEXT = {EnvVars.RATE_LIMITS: "rate_limits", EnvVars.QUOTAS: "quotas", PROFILE_VARIABLE: "profile"}


@dataclass(frozen=True)
class Synthesized:
    template: dict[str, Any]
    stage: str
    stack_name: str
    seconds: float


def environment_context(environ: Mapping[str, str]) -> dict[str, str]:
    """The context keys this process's environment sets (ENVIRONMENT_CONTEXT); every synth of the
    local platform (`make dev`, `--attach`, `python -m local.ops`) reads them through here."""
    return {key: environ[name] for name, key in ENVIRONMENT_CONTEXT.items() if environ.get(name, "").strip()}


def synthesize(context: dict[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> Synthesized:
    """The template for ``context`` over the local defaults and the environment's keys
    (:func:`environment_context` of ``environ``, this process's by default). A bad value stops
    the process with the key, the variable that set it and the rule named (no traceback)."""
    from stacks.app_builder import build_app  # deferred: importing aws_cdk starts the jsii runtime
    from stacks.config import ContextError

    from_environment = environment_context(os.environ if environ is None else environ)
    from_environment = {key: value for key, value in from_environment.items() if key not in (context or {})}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mcp-local-synth-") as outdir:
        # cdk-nag stays off: a compliance finding must fail `cdk synth`, not the local loop.
        try:
            app, stack = build_app({**LOCAL_CONTEXT, **from_environment, **(context or {})}, nag=False, outdir=outdir)
        except ContextError as error:
            raise SystemExit(f"configuration error: {error}{_set_by(str(error), from_environment)}") from None
        assembly = app.synth()
        artifact = assembly.get_stack_by_name(stack.stack_name)
        template = json.loads((Path(assembly.directory) / artifact.template_file).read_text())
        stage, stack_name = stack.config.stage, stack.stack_name
    return Synthesized(template, stage, stack_name, time.monotonic() - started)


def _set_by(message: str, from_environment: dict[str, str]) -> str:
    # A rule names its key first ("rate_limits: ..."), a plain value as "CDK context 'profile' ...".
    names = [
        name
        for name, key in ENVIRONMENT_CONTEXT.items()
        if key in from_environment and message.startswith((key, f"CDK context '{key}'"))
    ]
    return f" (set by {names[0]})" if names else ""


def release_jsii_runtime() -> None:
    """Stops the Node.js process jsii started for the synth; call it once no construct is used.

    Frees its memory for the rest of the session, and a terminal Ctrl-C (which reaches the
    whole process group) can then no longer kill it first and leave jsii's exit hook writing
    to a closed pipe. jsii has no public call for this, hence the guarded private access; jsii
    does not restart it, so no CDK object may be touched afterwards in this process.
    """
    try:
        from jsii._runtime import kernel

        provider: Any = kernel.provider
        provider._process.stop()
    except (ImportError, AttributeError):
        logger.warning("could not stop the jsii runtime after synth (jsii internals changed?)", exc_info=True)
