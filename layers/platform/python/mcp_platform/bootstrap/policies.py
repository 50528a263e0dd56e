"""The deployment's policies, built at start: the ``*.cedar`` files of the policies folder,
validated against the schema of the catalog they govern.

The folder is ``MCP_POLICIES_DIR``, or the app's own ``policies/`` beside its features package
(``functions/endpoint/policies``, shipped in the endpoint's code: ``/var/task/policies`` on Lambda).
No policy file: no policies, and neither the engine nor the policy use cases are imported.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from mcp_platform.config import ConfigError, EnvVars, Settings
from mcp_platform.protocol.catalog import Catalog

if TYPE_CHECKING:
    from mcp_platform.application.policies.access import Policies

logger = logging.getLogger(__name__)

POLICY_SUFFIX = ".cedar"
POLICIES_FOLDER = "policies"


def policies_dir(settings: Settings, features_folder: Path) -> Path:
    """Where the policy files are: ``MCP_POLICIES_DIR``, else ``policies/`` beside the features
    package's folder."""
    if settings.policies_dir:
        directory = Path(settings.policies_dir).expanduser()
        if not directory.is_dir():  # a typo must not leave a deployment without its policies
            raise ConfigError(f"{EnvVars.POLICIES_DIR} must be a folder, got {settings.policies_dir!r}")
        return directory
    return features_folder.resolve().parent / POLICIES_FOLDER


def features_folder(features: ModuleType) -> Path:
    """The features package's folder (a namespace package has none: the working directory's)."""
    return Path(features.__file__).parent if features.__file__ is not None else Path()


def policy_files(directory: Path) -> dict[str, str]:
    """The folder's ``*.cedar`` files (not its subfolders'), by name, in name order."""
    if not directory.is_dir():
        return {}
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(directory.glob(f"*{POLICY_SUFFIX}"))}


def build_policies(settings: Settings, catalog: Catalog, features: ModuleType) -> Policies | None:
    """The policies over ``catalog``, or None without policy files; a policy that does not parse
    or that the catalog's schema refuses stops the start with a :class:`ConfigError` naming it."""
    directory = policies_dir(settings, features_folder(features))
    files = policy_files(directory)
    if not files:
        return None
    from mcp_platform.adapters.cedar.engine import CedarPolicies
    from mcp_platform.application.policies.access import Policies
    from mcp_platform.application.policies.ports import PolicyError

    try:
        engine = CedarPolicies(files, catalog)
    except PolicyError as exc:
        raise ConfigError(f"policies in {directory}: {exc}") from exc
    logger.info("policies: %d from %s (%s)", engine.count, directory, ", ".join(files))
    return Policies(engine, source=str(directory))
