"""Two versions at once: the release that may still serve beside this one (``compatible_with``)
reaches every function that writes a stored format it reads: the ones that commit (the session's
context) and the audit function (its items); none is told anything by default."""

from __future__ import annotations

from typing import Any

from mcp_platform.config import EnvVars
from tests.infra.synth import Synthesized


def environments(s: Synthesized) -> dict[str, dict[str, Any]]:
    """Each function's environment, by its service name (the endpoint's: the Web Adapter's handler)."""
    found = {}
    for function in s.resources("AWS::Lambda::Function").values():
        env = function["Properties"].get("Environment", {}).get("Variables", {})
        if EnvVars.SESSION_TABLE in env:
            found[env.get(EnvVars.SERVICE_NAME, function["Properties"].get("Handler"))] = env
    return found


WRITERS = ("mcp-audit",)


def test_by_default_every_writer_writes_todays_formats(default: Synthesized) -> None:
    found = environments(default)
    writers = {name: env for name, env in found.items() if EnvVars.COMPATIBLE_WITH in env}
    assert set(WRITERS) <= set(writers) and len(writers) >= 3  # the endpoint, the task worker, audit
    assert {env[EnvVars.COMPATIBLE_WITH] for env in writers.values()} == {""}


def test_an_upgrades_first_step_reaches_every_writer(alt: Synthesized) -> None:
    found = environments(alt)
    writers = {name: env for name, env in found.items() if EnvVars.COMPATIBLE_WITH in env}
    assert set(WRITERS) <= set(writers) and len(writers) >= 2
    assert {env[EnvVars.COMPATIBLE_WITH] for env in writers.values()} == {"0.1"}
