"""The platform's tests pass with the features folder emptied: a team that replaces or removes
the starter app (functions/endpoint/mcp_tools) keeps them.

A few key tests run in a pytest of their own under ``--without-app`` (tests/conftest.py), next to
a probe that the app is really out of sight there. The whole suite runs that way with
``pytest -n 2 --dist loadgroup --without-app`` (docs/testing.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.features import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KEY_TESTS = (
    # the catalog, dispatch and schemas, in process
    "tests/unit/transport/test_protocol_core.py",
    # the whole endpoint on a moto server, called by the official SDK client in both eras
    "tests/integration/endpoint/test_endpoint_sdk_clients.py",
)
PROBE_TEST = "test_the_features_folder_is_empty_for_this_process_and_for_python_m_local"
PROBE = f"""
import importlib.util
import os
from pathlib import Path

import mcp_tools


def {PROBE_TEST}() -> None:
    (folder,) = mcp_tools.__path__
    assert [p.name for p in Path(folder).iterdir() if p.suffix == ".py"] == ["__init__.py"]
    assert importlib.util.find_spec("mcp_tools.echo") is None
    assert os.environ["MCP_FEATURES_DIR"] == folder
"""


def test_key_platform_tests_pass_with_the_features_folder_empty(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe_without_app.py"
    probe.write_text(PROBE)
    command = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "--rootdir", str(ROOT)]
    command += ["-c", str(ROOT / "pyproject.toml"), "--without-app", str(probe), *KEY_TESTS]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, done.stdout[-6000:] + done.stderr[-2000:]
    # Every test ran and passed (none skipped for want of the app), the probe among them
    assert " passed" in lines[-1] and "skipped" not in lines[-1], lines[-1]
    passed = [line for line in lines if line.startswith("PASSED ")]
    assert any(
        line.endswith("::test_the_features_folder_is_empty_for_this_process_and_for_python_m_local") for line in passed
    )
    assert any("test_endpoint_sdk_clients.py::" in line for line in passed)
