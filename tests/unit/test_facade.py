"""The names a feature module imports from ``mcp_platform``, loaded only when first used: every
function imports the package at cold start."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

import mcp_platform

FEATURE_MODULE_NAMES = {"tool", "resource", "resource_template", "prompt", "ToolContext", "ToolError", "ToolResult"}


def test_importing_the_package_imports_none_of_its_modules() -> None:
    code = "import sys, mcp_platform\nprint(sorted(m for m in sys.modules if m.startswith('mcp_platform.')))"
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=False)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_each_name_is_the_object_of_the_module_that_defines_it() -> None:
    assert set(mcp_platform.__all__) >= FEATURE_MODULE_NAMES
    for name in mcp_platform.__all__:
        defined = getattr(importlib.import_module(mcp_platform._FACADE[name]), name)
        assert getattr(mcp_platform, name) is defined, name
    assert set(dir(mcp_platform)) >= FEATURE_MODULE_NAMES


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'tools'"):
        mcp_platform.tools  # noqa: B018
    with pytest.raises(ImportError):
        exec("from mcp_platform import Tool")
