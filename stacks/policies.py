"""Per-tool policies at synth: the endpoint's ``policies/*.cedar`` (shipped in its code asset and
read by the function at start, ``/var/task/policies``) validated against the schema generated from
the app's catalog, so that a policy naming an unknown tool or argument, or a type error, fails
`cdk synth` with the policy named instead of the deployed function's start.

No policy file: nothing is imported (the features package, the engine).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from mcp_platform.bootstrap.policies import POLICIES_FOLDER, policy_files
from stacks.config import ContextError

ROOT = Path(__file__).resolve().parent.parent
ENDPOINT_CODE = ROOT / "functions" / "endpoint"
POLICIES_DIR = ENDPOINT_CODE / POLICIES_FOLDER
FEATURES_DIR = ENDPOINT_CODE / "mcp_tools"
FEATURES_PACKAGE = "mcp_tools"  # the name its modules import each other by, as on Lambda


def check_policies(directory: Path | None = None, features: Path | None = None) -> int:
    """How many policy files ``directory`` (the endpoint's) holds, each valid for the features
    package in ``features`` (the endpoint's); :class:`ContextError` naming the file and policy otherwise."""
    directory = directory or POLICIES_DIR
    features = features or FEATURES_DIR
    files = policy_files(directory)
    if not files:
        return 0
    from mcp_platform.adapters.cedar.engine import CedarPolicies
    from mcp_platform.application.policies.ports import PolicyError
    from mcp_platform.protocol.catalog import Catalog

    try:
        CedarPolicies(files, Catalog.discover(_features_package(features)))
    except PolicyError as exc:
        raise ContextError(f"policies in {directory}: {exc}") from exc
    return len(files)


def _features_package(folder: Path) -> ModuleType:
    """The features package as the function imports it (its modules import each other by name)."""
    loaded = sys.modules.get(FEATURES_PACKAGE)
    if loaded is not None and loaded.__file__ == str(folder / "__init__.py"):
        return loaded
    spec = importlib.util.spec_from_file_location(
        FEATURES_PACKAGE, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise ContextError(f"the features folder {folder} is not a Python package (no __init__.py)")
    package = importlib.util.module_from_spec(spec)
    sys.modules[FEATURES_PACKAGE] = package
    spec.loader.exec_module(package)
    return package
