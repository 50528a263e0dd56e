"""G4 off by default: without policy files the endpoint never imports Cedar or the policy use
cases (cold start unchanged) and every request is permitted; with them it starts only when every
policy validates against the catalog's schema."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_platform.bootstrap.endpoint import build_app
from mcp_platform.config import ConfigError, Settings
from tests.support import platform_tools
from tests.support.cold_start import loaded_at_start

POLICY_MODULES = ("cedarpy", "mcp_platform.adapters.cedar.engine", "mcp_platform.application.policies.access")
PERMIT_ALL = 'permit(principal, action in Action::"call_tool", resource);\n'


def test_without_policy_files_the_endpoint_starts_without_cedar(tmp_path: Path) -> None:
    assert not any(loaded_at_start(POLICY_MODULES).values())
    (tmp_path / "all.cedar").write_text(PERMIT_ALL)
    # The probe sees them when they load: the same start with a policy folder.
    assert all(loaded_at_start(POLICY_MODULES, MCP_POLICIES_DIR=str(tmp_path)).values())


def settings(**env: str) -> Settings:
    return Settings.from_mapping({"SESSION_TABLE_NAME": "sessions", "AWS_REGION": "us-east-1", **env})


def test_policies_give_the_endpoint_its_policies_and_bad_ones_stop_the_start(tmp_path: Path) -> None:
    """Given a valid policy folder, the endpoint has policies; none, it has none; a policy naming
    an unknown argument, or a folder that does not exist, stops the start naming the problem."""
    assert build_app(settings(), platform_tools).policies is None
    (tmp_path / "all.cedar").write_text(PERMIT_ALL)
    app = build_app(settings(MCP_POLICIES_DIR=str(tmp_path)), platform_tools)
    assert app.policies is not None and app.policies.source == str(tmp_path)
    (tmp_path / "limit.cedar").write_text(
        '@id("limit")\nforbid(principal, action == Action::"echo", resource) when { context.arguments.txt == "x" };'
    )
    with pytest.raises(ConfigError, match=r"limit: .*arguments\.txt"):
        build_app(settings(MCP_POLICIES_DIR=str(tmp_path)), platform_tools)
    with pytest.raises(ConfigError, match="MCP_POLICIES_DIR must be a folder"):
        build_app(settings(MCP_POLICIES_DIR=str(tmp_path / "missing")), platform_tools)
