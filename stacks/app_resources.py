"""The app's own AWS resources, beside the platform's.

The features folder's app may ship ``functions/endpoint/app_resources.py`` defining
``add_resources(app)`` (an :class:`AppScope`): it creates the app's resources in ``app.scope``,
grants each of ``app.functions`` what the tools need, and names the resources in each function's
environment (``function.add_environment``), where the features package's ``build_deps`` reads
them. The functions are the endpoint and the task worker, which run the same tools. The app's data
follows the platform's rules through the scope: encrypted with the platform's key, retained and
protected from deletion outside dev stages (D11). The file is CDK code, run at synth only: it is
left out of the functions' code asset.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from stacks.common import deletion_protection, removal_policy
from stacks.config import PlatformConfig

ROOT = Path(__file__).resolve().parent.parent
HOOK_FILE = ROOT / "functions" / "endpoint" / "app_resources.py"
HOOK_NAME = "add_resources"
CODE_EXCLUDES = ["**/__pycache__", "**/*.pyc", HOOK_FILE.name]
"""What the endpoint's code asset leaves out: bytecode of this machine, and the CDK hook."""


@dataclass(frozen=True)
class AppScope:
    """What the app's hook builds in, and with."""

    scope: Construct
    functions: Sequence[lambda_.Function]
    """The functions that run the tools: the endpoint, and the task worker where deployed."""
    key: kms.IKey
    """The platform's customer-managed key: encrypt the app's data with it."""
    removal_policy: RemovalPolicy
    """DESTROY on dev stages (or when the context says so), RETAIN elsewhere."""
    deletion_protection: bool
    """On outside dev stages, as for the platform's tables."""


AddResources = Callable[[AppScope], None]


class AppResources(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: PlatformConfig,
        key: kms.IKey,
        functions: Sequence[lambda_.Function],
        hook: Path = HOOK_FILE,
    ) -> None:
        super().__init__(scope, construct_id)
        add = load_hook(hook)
        if add is not None:
            add(
                AppScope(
                    scope=self,
                    functions=functions,
                    key=key,
                    removal_policy=removal_policy(config),
                    deletion_protection=deletion_protection(config),
                )
            )


def load_hook(path: Path) -> AddResources | None:
    """The app's ``add_resources``, or None when the app has no resources of its own."""
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("app_resources", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    add = getattr(module, HOOK_NAME, None)
    if not callable(add):
        raise TypeError(f"{path} must define {HOOK_NAME}(app)")
    return add
