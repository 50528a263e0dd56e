"""Synthesizes the CDK app in-process, exactly as the tests in tests/infra do.

Nothing is cached: every start synthesizes the current stacks, so the local resources can
never drift from what `cdk deploy` would create.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Locally the endpoint talks to the table directly (X5: DAX has no emulator), and the layer
# is hashed from its sources instead of bundled, so synth never runs pip.
LOCAL_CONTEXT: dict[str, Any] = {"dax": "false", "aws:cdk:bundling-stacks": []}


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
    return Synthesized(template, stack.config.stage, stack.stack_name, time.monotonic() - started)
