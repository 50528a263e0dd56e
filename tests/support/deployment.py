"""The platform synthesized as for a deploy and its resources on the emulator: the functions of the
template start from their staged assets with the environment the template gives them
(tests/integration/functions)."""

from __future__ import annotations

import contextlib
import json
import platform
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from local.emulator import Attributes, Clients, Emulator, describe, provision
from local.intrinsics import resolve
from local.resources import ResourcePlan, plan_from_template
from mcp_platform.config import EnvVars
from stacks.app_builder import build_app
from tests.support.aws import free_port, set_fake_aws_env
from tests.support.features import PLATFORM_TOOLS_DIR, serve_from_asset
from tests.support.lambda_runtime import DeployedFunction

REGION = "us-east-1"
ARCHITECTURE = {"x86_64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}[platform.machine()]


@dataclass(frozen=True)
class Deployment:
    template: dict[str, Any]
    plan: ResourcePlan
    attributes: Attributes
    clients: Clients
    outdir: Path

    def function(self, handler: str, **override: str) -> DeployedFunction:
        """The function the template runs ``handler`` in, with its staged assets and environment."""
        (logical_id,) = [
            k
            for k, v in self.template["Resources"].items()
            if v["Type"] == "AWS::Lambda::Function" and v["Properties"].get("Handler") == handler
        ]
        resource = self.template["Resources"][logical_id]
        props = resource["Properties"]
        (layer_ref,) = [ref for ref in props["Layers"] if "Ref" in ref]  # the shared layer (the other is an ARN)
        layer = self.template["Resources"][layer_ref["Ref"]]
        environment = {
            name: str(resolve(value, self.attributes, REGION))
            for name, value in props["Environment"]["Variables"].items()
        }
        return DeployedFunction(
            logical_id=logical_id,
            name=self.plan.function(logical_id).name,
            handler=handler,
            task_root=self.outdir / resource["Metadata"]["aws:asset:path"],
            layer_python=self.outdir / layer["Metadata"]["aws:asset:path"] / "python",
            environment={**environment, EnvVars.AWS_ENDPOINT_URL: self.clients.dynamodb.meta.endpoint_url, **override},
            memory_mb=int(props["MemorySize"]),
            timeout_s=int(props["Timeout"]),
            region=REGION,
        )


@contextlib.contextmanager
def deployed(
    tmp_path_factory: pytest.TempPathFactory, features: Path = PLATFORM_TOOLS_DIR, **context: Any
) -> Iterator[Deployment]:
    """The stacks synthesized as for a deploy to this architecture (the layer bundled), with
    ``context`` on top, and the template's tables, stream, consumer, queues and secrets on a fresh
    emulator; the endpoint's code asset (the endpoint's and the task worker's) serves ``features``."""
    outdir = tmp_path_factory.mktemp("cdk.out")
    # A stage of its own: moto's state is per process, and other tests of this worker provision the
    # dev stage's resource names on their own moto servers.
    stage = f"shaped{uuid.uuid4().hex[:6]}"
    context = {
        "stage": stage,
        "dax": "false",
        "architecture": ARCHITECTURE,
        "aws:cdk:enable-asset-metadata": True,
        **context,
    }
    app, stack = build_app(context, nag=False, outdir=str(outdir))
    assembly = app.synth()
    endpoint_assets = [path.parent for path in Path(assembly.directory).glob("asset.*/endpoint_app.py")]
    assert endpoint_assets, "no staged endpoint asset"
    for task_root in endpoint_assets:
        serve_from_asset(task_root, features)
    template = json.loads(
        (Path(assembly.directory) / assembly.get_stack_by_name(stack.stack_name).template_file).read_text()
    )
    emulator = Emulator(free_port(), REGION)
    emulator.start()
    with pytest.MonkeyPatch.context() as patch:
        set_fake_aws_env(patch)  # the test's own clients; each function gets its credentials from its environment
        try:
            plan = plan_from_template(template, stack.config.stage)
            clients = Clients.connect(emulator.endpoint_url, REGION)
            provision(plan, clients)
            yield Deployment(template, plan, describe(plan, clients, REGION), clients, Path(assembly.directory))
        finally:
            emulator.stop()
