"""One synthesized template per variant per test session (synth costs seconds, not tests).

Variants: ``default`` is cdk.json's configuration (dev, dax=true, arm64, ON_DEMAND);
``alt`` flips everything that has an alternative (prod, dax=false, x86_64, PROVISIONED sized
from K6 inputs, a CORS allow-list). Both synthesize with cdk-nag attached, so a finding without
an acknowledgement fails the fixture and every test that uses it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk.assertions import Template  # noqa: E402

from stacks.app_builder import build_app  # noqa: E402
from stacks.platform_stack import PlatformStack  # noqa: E402

# Tests never run pip: the layer asset is hashed from its sources, not bundled.
NO_BUNDLING: dict[str, Any] = {"aws:cdk:bundling-stacks": []}
ALT_CONTEXT: dict[str, Any] = {
    "stage": "prod",
    "dax": "false",  # the string form, as `-c dax=false` delivers it
    "architecture": "x86_64",
    "stream_mode": "PROVISIONED",
    "peak_records_per_s": 5000,
    "avg_record_bytes": 2048,
    "retention_hours": 720,
    "allowed_origins": "https://app.example.com,http://localhost:6274",
}


@dataclass(frozen=True)
class Synthesized:
    stack: PlatformStack
    template: Template
    json: dict[str, Any]
    template_path: Path

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.json["Resources"].items() if v["Type"] == resource_type}

    def one(self, resource_type: str) -> dict[str, Any]:
        found = list(self.resources(resource_type).values())
        assert len(found) == 1, f"expected one {resource_type}, found {len(found)}"
        return found[0]


def synthesize(tmp: Path, context: dict[str, Any]) -> Synthesized:
    app, stack = build_app({**NO_BUNDLING, **context}, outdir=str(tmp))
    assembly = app.synth()
    artifact = assembly.get_stack_by_name(stack.stack_name)
    path = Path(assembly.directory) / artifact.template_file
    template_json = json.loads(path.read_text())
    return Synthesized(stack, Template.from_json(template_json), template_json, path)


@pytest.fixture(scope="session")
def default(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("default"), {})


@pytest.fixture(scope="session")
def alt(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("alt"), ALT_CONTEXT)


@pytest.fixture(scope="session", params=["default", "alt"])
def variant(request: pytest.FixtureRequest) -> Synthesized:
    """Both variants, for properties that must hold in every configuration."""
    synthesized: Synthesized = request.getfixturevalue(request.param)
    return synthesized
