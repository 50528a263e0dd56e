"""The shared layer: the domain package ``mcp_platform`` plus its locked third-party dependencies."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from scripts.layer import STAMP, compile_bytecode, features_digest, stale_lock, stamp_for
from stacks.config import PlatformConfig
from stacks.runtime import architecture_of, lambda_runtime

ROOT = Path(__file__).resolve().parent.parent
LAYER_SOURCE = ROOT / "layers" / "platform"
BUILD_SCRIPT = ROOT / "scripts" / "layer.py"


@jsii.implements(ILocalBundling)
class LayerBundler:
    """Local bundler, so synth never needs Docker.

    Reuses build/layer-<arch> (from `make layer`) when it was built from the current lock file
    for the configured Python, and always copies the current ``mcp_platform`` sources on top,
    so a deploy never ships stale domain code, then compiles the whole layer to bytecode for
    that Python (scripts/layer.py ``compile_bytecode``). Otherwise it runs scripts/layer.py build.
    Either way a lock older than its requirements (the platform's or the features folder's) stops
    the synth: the layer would lack what the app's modules import.
    """

    def __init__(self, architecture: str, python: str) -> None:
        self.architecture = architecture
        self.python = python

    def try_bundle(self, output_dir: str, *_options: Any, **_kw: Any) -> bool:  # jsii passes the options
        stale = stale_lock(self.architecture, self.python)
        if stale is not None:
            raise RuntimeError(f"the layer's lock is stale: {stale}")  # jsii reports it as synth's error
        out = Path(output_dir)
        prebuilt = ROOT / "build" / f"layer-{self.architecture}"
        stamp = prebuilt / STAMP
        if stamp.is_file() and stamp.read_text().strip() == stamp_for(self.architecture, self.python):
            shutil.copytree(prebuilt / "python", out / "python", ignore=_ignore_domain, dirs_exist_ok=True)
            shutil.copytree(
                LAYER_SOURCE / "python" / "mcp_platform",
                out / "python" / "mcp_platform",
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                dirs_exist_ok=True,
            )
            compile_bytecode(out / "python", self.python)
        else:
            subprocess.run(  # noqa: S603 - fixed script; architecture validated by PlatformConfig
                [sys.executable, str(BUILD_SCRIPT), "build", self.architecture, output_dir],
                check=True,
                cwd=ROOT,
                env={**os.environ, "LAMBDA_PYTHON": self.python},
            )
            (out / STAMP).unlink(missing_ok=True)
        return True


def _ignore_domain(directory: str, names: list[str]) -> set[str]:
    top = Path(directory).name == "python"
    return {n for n in names if n == "__pycache__" or (top and n == "mcp_platform")}


class SharedLayer(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: PlatformConfig) -> None:
        super().__init__(scope, construct_id)
        code = lambda_.Code.from_asset(
            str(LAYER_SOURCE),
            # The hash covers the sources (requirements, the lock files, the domain package) and
            # the bundling options, whose environment names the architecture and the Python (and
            # the features folder's requirements, when it has any: the bundler then runs again and
            # refuses a lock made before they changed): the same commit gives the same asset, and
            # a new lock a new one.
            asset_hash_type=AssetHashType.SOURCE,
            exclude=["**/__pycache__", "**/*.pyc"],
            bundling=BundlingOptions(
                image=DockerImage.from_registry("local-bundling-only"),  # never pulled
                local=LayerBundler(config.architecture, config.lambda_python),
                environment=bundling_environment(config.architecture, config.lambda_python),
            ),
        )
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=code,
            compatible_runtimes=[lambda_runtime(config)],
            compatible_architectures=[architecture_of(config)],
            description="mcp_platform domain package with uvicorn and the DAX client",
        )


def bundling_environment(architecture: str, python: str) -> dict[str, str]:
    """Part of the layer asset's hash: what its bundle depends on beyond the layer's sources."""
    environment = {"LAYER_ARCH": architecture, "LAYER_PYTHON": python}
    if features_digest():
        environment["LAYER_FEATURES_REQUIREMENTS_SHA256"] = features_digest()
    return environment
