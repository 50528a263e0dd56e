"""G1/G2 off by default: a stack without rules never imports governance, so it adds no AWS call
and nothing to the cold start; with rules the endpoint admits through it."""

from __future__ import annotations

import pytest

from mcp_platform.bootstrap.endpoint import build_app
from mcp_platform.config import ConfigError, Settings
from tests.support import platform_tools
from tests.support.cold_start import loaded_at_start

GOVERNANCE = (
    "mcp_platform.application.governance.admission",
    "mcp_platform.application.governance.rules",
    "mcp_platform.adapters.dynamodb.rate_counters",
)


def test_without_rules_the_endpoint_starts_without_governance() -> None:
    assert not any(loaded_at_start(GOVERNANCE).values())
    rules = {"MCP_RATE_LIMITS": '{"principal": "5/minute"}', "LIMITS_TABLE_NAME": "limits"}
    assert all(loaded_at_start(GOVERNANCE, **rules).values())  # the probe sees them when they load


def settings(**env: str) -> Settings:
    return Settings.from_mapping({"SESSION_TABLE_NAME": "sessions", "AWS_REGION": "us-east-1", **env})


def test_rules_give_the_endpoint_a_governor_and_bad_ones_stop_the_start() -> None:
    """Given rules, then the endpoint admits through a governor; a rule naming no tool of the
    server, a bad rule, or rate limits without their table stop the start naming the problem."""
    app = build_app(settings(MCP_RATE_LIMITS='{"principal": "5/minute"}', LIMITS_TABLE_NAME="limits"), platform_tools)
    assert app.governor is not None and app.governor.rate_rules[0].limit == 5
    assert build_app(settings(), platform_tools).governor is None
    refusals = {
        "names no tool": {"MCP_RATE_LIMITS": '{"tool:no_such_tool": "1/minute"}', "LIMITS_TABLE_NAME": "limits"},
        "'principal'": {"MCP_RATE_LIMITS": '{"principal": "5/week"}', "LIMITS_TABLE_NAME": "limits"},
        "LIMITS_TABLE_NAME is required": {"MCP_RATE_LIMITS": '{"principal": "5/minute"}'},
        "limits the OAuth facade": {"MCP_RATE_LIMITS": '{"register": "5/hour"}', "LIMITS_TABLE_NAME": "limits"},
    }
    for message, env in refusals.items():
        with pytest.raises(ConfigError, match=message):
            build_app(settings(**env), platform_tools)
