"""The ``subscriptions`` context key: off by default, validated at synth, and nothing but one
environment variable apart (no resource, no permission: an open stream is billed as the
invocation it holds, nothing more)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from mcp_platform.config import EnvVars
from stacks.config import ContextError, PlatformConfig
from tests.infra.synth import Synthesized

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]
VERSION_HASH = re.compile(r"(CurrentVersion[0-9A-F]{8})[0-9a-f]{32}")


def endpoint_env(synthesized: Synthesized) -> dict[str, Any]:
    functions = synthesized.resources("AWS::Lambda::Function").values()
    endpoint = next(fn for fn in functions if fn["Properties"].get("Handler") == "run.sh")
    variables: dict[str, Any] = endpoint["Properties"]["Environment"]["Variables"]
    return variables


def test_off_by_default_on_by_context(default: Synthesized, subscribed: Synthesized) -> None:
    assert PlatformConfig.from_context({}.get).subscriptions is False
    assert endpoint_env(default)[EnvVars.SUBSCRIPTIONS] == "false"
    assert endpoint_env(subscribed)[EnvVars.SUBSCRIPTIONS] == "true"


def without_asset_keys(value: Any) -> Any:
    """Asset object keys are content hashes of the sources (they change with any edit of them), and
    so are the logical ids of published versions: a hash of the function's configuration, the
    variable included, follows ``CurrentVersion<8 hex>``."""
    if isinstance(value, str):
        return VERSION_HASH.sub(r"\1<configuration>", value)
    if isinstance(value, dict):
        return {without_asset_keys(k): "<asset>" if k == "S3Key" else without_asset_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_asset_keys(item) for item in value]
    return value


def test_on_differs_from_off_by_the_variable_alone(default: Synthesized, subscribed: Synthesized) -> None:
    """Same resources, same policies; only MCP_SUBSCRIPTIONS of the functions that run tools (the
    endpoint, and the task worker: a task may announce a resource update) differs."""
    on, off = (without_asset_keys(json.loads(json.dumps(s.json["Resources"]))) for s in (subscribed, default))
    assert set(on) == set(off)
    for template in (on, off):
        tool_runners = [
            r
            for r in template.values()
            if r["Type"] == "AWS::Lambda::Function"
            and r["Properties"]["Handler"] in ("run.sh", "task_worker.lambda_handler")
        ]
        assert len(tool_runners) == 2
        for function in tool_runners:
            function["Properties"]["Environment"]["Variables"].pop(EnvVars.SUBSCRIPTIONS)
    assert on == off


@pytest.mark.parametrize("value", ["sometimes", 7, "2", []])
def test_a_bad_value_fails_synth_naming_the_key(value: Any) -> None:
    with pytest.raises(ContextError, match="'subscriptions' must be true or false"):
        PlatformConfig.from_context({"subscriptions": value}.get)


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("false", False), (True, True), ("OFF", False)])
def test_the_command_line_string_forms_are_accepted(value: Any, expected: bool) -> None:
    assert PlatformConfig.from_context({"subscriptions": value}.get).subscriptions is expected
