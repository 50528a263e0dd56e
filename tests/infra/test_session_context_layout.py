"""D1/D3 as amended: where the functions that commit put a session's appended context is the
``session_context_layout`` key's (items by default; list while a release from before the context
items may still serve), the same for every function that commits."""

from __future__ import annotations

from typing import Any

from mcp_platform.config import EnvVars
from tests.infra.synth import Synthesized


def committing_functions(s: Synthesized) -> list[dict[str, Any]]:
    """The environments of the functions that commit tool calls: the endpoint and the task worker."""
    environments = [
        f["Properties"].get("Environment", {}).get("Variables", {})
        for f in s.resources("AWS::Lambda::Function").values()
    ]
    return [env for env in environments if EnvVars.SESSION_TTL_SECONDS in env]


def test_the_functions_that_commit_write_context_items_by_default(default: Synthesized) -> None:
    found = committing_functions(default)
    assert len(found) == 2  # the endpoint and the task worker
    assert {env[EnvVars.SESSION_CONTEXT_LAYOUT] for env in found} == {"items"}


def test_the_list_layout_reaches_every_function_that_commits(alt: Synthesized) -> None:
    found = committing_functions(alt)
    assert found and {env[EnvVars.SESSION_CONTEXT_LAYOUT] for env in found} == {"list"}
