"""The app's own AWS resources, beside the platform's.

The features folder's app may ship ``functions/endpoint/app_resources.py`` defining
``add_resources(scope, functions)``: it creates the app's resources in ``scope``, grants each
function what the tools need, and names the resources in each function's environment
(``function.add_environment``), where the features package's ``build_deps(app)`` reads them. It
is applied to the endpoint and to the task worker, which run the same tools. The file is CDK code,
run at synth only: it is left out of the functions' code asset.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path

from aws_cdk import aws_lambda as lambda_
from constructs import Construct

ROOT = Path(__file__).resolve().parent.parent
HOOK_FILE = ROOT / "functions" / "endpoint" / "app_resources.py"
HOOK_NAME = "add_resources"
CODE_EXCLUDES = ["**/__pycache__", "**/*.pyc", HOOK_FILE.name]
"""What the endpoint's code asset leaves out: bytecode of this machine, and the CDK hook."""

AddResources = Callable[[Construct, Sequence[lambda_.Function]], None]


class AppResources(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, functions: Sequence[lambda_.Function], hook: Path = HOOK_FILE
    ) -> None:
        super().__init__(scope, construct_id)
        add = load_hook(hook)
        if add is not None:
            add(self, functions)


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
        raise TypeError(f"{path} must define {HOOK_NAME}(scope, functions)")
    return add
