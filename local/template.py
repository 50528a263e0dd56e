"""Synthesizes the CDK app in-process, exactly as the tests in tests/infra do.

Nothing is cached: every start synthesizes the current stacks, so the local resources can
never drift from what `cdk deploy` would create.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Locally the endpoint talks to the table directly (X5: DAX has no emulator), and the layer
# is hashed from its sources instead of bundled, so synth never runs pip. Notification streams
# are on: an open stream costs nothing on one machine, and `make dev` shows every feature.
logger = logging.getLogger(__name__)
LOCAL_CONTEXT: dict[str, Any] = {"dax": "false", "subscriptions": "true", "aws:cdk:bundling-stacks": []}


@dataclass(frozen=True)
class Synthesized:
    template: dict[str, Any]
    stage: str
    stack_name: str
    seconds: float


def synthesize(context: dict[str, Any] | None = None) -> Synthesized:
    from stacks.app_builder import build_app  # deferred: importing aws_cdk starts the jsii runtime

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mcp-local-synth-") as outdir:
        # cdk-nag stays off: a compliance finding must fail `cdk synth`, not the local loop.
        app, stack = build_app({**LOCAL_CONTEXT, **(context or {})}, nag=False, outdir=outdir)
        assembly = app.synth()
        artifact = assembly.get_stack_by_name(stack.stack_name)
        template = json.loads((Path(assembly.directory) / artifact.template_file).read_text())
        stage, stack_name = stack.config.stage, stack.stack_name
    return Synthesized(template, stage, stack_name, time.monotonic() - started)


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
