"""The official MCP conformance suite's generic server scenarios, against a loopback instance
without auth (the suite cannot send headers; MCP_AUTH=none is accepted only on loopback).

Run by hand: ``npx conformance server --url http://localhost:8000/mcp --scenario <name>``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import conformance_tools
from tests.support.aws import free_port
from tests.support.endpoint import AwsStack, endpoint_instance

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
GENERIC_SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "logging-set-level",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
]
TOOL_SCENARIOS = [  # served by the fixture tools in tests/conformance_tools
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
]


@pytest.fixture(scope="module")
def open_url(aws: AwsStack) -> Iterator[str]:
    port = free_port()
    with endpoint_instance(aws, MCP_AUTH="none", port=port, extra_tools=(conformance_tools,)) as running:
        yield running.url.replace("127.0.0.1", "localhost")
        assert running.recorder.validate_all() > 0


@pytest.mark.parametrize("scenario", GENERIC_SCENARIOS + TOOL_SCENARIOS)
def test_conformance_scenario_passes(open_url: str, scenario: str) -> None:
    npx = shutil.which("npx")
    assert npx, "Node.js (npx) is required: make test installs the pinned suite"
    completed = subprocess.run(
        [npx, "--no-install", "conformance", "server", "--url", open_url, "--scenario", scenario],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = completed.stdout + completed.stderr
    match = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", output)
    assert match, output[-2000:]
    passed, total, failed = map(int, match.groups())
    assert failed == 0 and passed == total > 0, output[-2000:]
