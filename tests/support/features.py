"""Which features the platform's tests serve: their own fixture package, never the starter app.

In process, tests pass ``tests.support.platform_tools`` to the composition root
(tests/support/endpoint.py). Out of process, the same package is the features folder:
``python -m local`` is pointed at it (``MCP_FEATURES_DIR``, tests/support/local_platform.py), and
a staged copy of the endpoint's code asset gets it in place of ``mcp_tools``
(:func:`serve_from_asset`), so the functions run as deployed, with the platform's tools.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLATFORM_TOOLS_DIR = Path(__file__).resolve().parent / "platform_tools"
FEATURES_PACKAGE = "mcp_tools"  # the name the endpoint function imports its features by


def serve_from_asset(task_root: Path, features: Path = PLATFORM_TOOLS_DIR) -> None:
    """Replaces the features package of a staged (copied) endpoint code asset with ``features``."""
    target = task_root / FEATURES_PACKAGE
    if not (task_root / "endpoint_app.py").is_file():
        raise ValueError(f"{task_root} is not a staged endpoint asset (no endpoint_app.py)")
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(features, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def hide_the_app(scratch: Path) -> Path:
    """Makes this process, and the processes it starts, see an empty features folder in place of
    the starter app (``pytest --without-app``, tests/conftest.py); returns that folder.

    The empty package comes first on ``sys.path`` (a subprocess given this process's path gets
    it too, as the cold-start checks of ``endpoint_app`` do), and ``python -m local`` serves it
    unless a test names another ``MCP_FEATURES_DIR``.
    """
    empty = scratch / FEATURES_PACKAGE
    empty.mkdir(parents=True)
    (empty / "__init__.py").write_text('"""An empty features folder (pytest --without-app)."""\n')
    sys.path.insert(0, str(scratch))
    for name in [name for name in sys.modules if name.split(".")[0] == FEATURES_PACKAGE]:
        del sys.modules[name]  # imported before: found again, empty, on the next import
    os.environ["MCP_FEATURES_DIR"] = str(empty)
    return empty
