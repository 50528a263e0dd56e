"""G3 on `make dev` plus an attached endpoint (two real processes on one emulator): keys minted
with `python -m local.ops api-keys mint --tenant`, a tenant's session handle refused to the same
principal name in another tenant on the other process, and the local ingest and audit functions
scoping what they keep, read back with `python -m local.ops usage show --tenant` and `audit tenant`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from tests.support.local_platform import ROOT, LocalPlatform, local_platform, wait_for
from tests.support.mcp_http import CAPS_META, final_message, modern_call

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_tenants")]


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[LocalPlatform]]:
    with ExitStack() as stack:
        first = stack.enter_context(local_platform(tmp_path_factory.mktemp("tenants")))
        attach = {"LOCAL_AWS_PORT": first.aws_url.rsplit(":", 1)[1]}
        second = stack.enter_context(
            local_platform(tmp_path_factory.mktemp("tenants-attached"), env=attach, args=["--attach"])
        )
        yield [first, second]


def local_ops(platform: LocalPlatform, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LOCAL_AWS_PORT": platform.aws_url.rsplit(":", 1)[1]}
    return subprocess.run(
        [sys.executable, "-m", "local.ops", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def mint(platform: LocalPlatform, principal: str, tenant: str) -> str:
    minted = local_ops(platform, "api-keys", "mint", "--principal", principal, "--tenant", tenant)
    assert minted.returncode == 0, minted.stderr
    return minted.stdout.strip()


def tool(platform: LocalPlatform, key: str, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": CAPS_META}
    return final_message(modern_call(platform.mcp_url, key, request_id, "tools/call", params))


def test_a_tenants_session_is_a_strangers_to_another_tenant_and_its_trail_is_the_tenants(
    two: list[LocalPlatform],
) -> None:
    """Given alice of acme and alice of globex (keys minted with local.ops), when acme's alice
    opens a session on `make dev` and appends a note through the attached endpoint, then globex's
    alice is answered -31001 with that handle on either process; once the local ingest and audit
    functions have run, `usage show --tenant acme` counts acme's two calls and `audit tenant acme`
    lists that session's records, the tool-call record included, and no other session. A tenant
    name outside the syntax is refused at mint."""
    first, second = two
    acme, globex = mint(first, "alice", "acme"), mint(first, "alice", "globex")
    refused = local_ops(first, "api-keys", "mint", "--principal", "alice", "--tenant", "no/such")
    assert refused.returncode == 2 and "a tenant must be" in refused.stderr
    opened = tool(first, acme, 1, "open_session", {})
    handle = opened["result"]["structuredContent"]["session"]
    assert "result" in tool(second, acme, 2, "append_note", {"session": handle, "text": "acme only"})
    for platform in two:
        foreign = tool(platform, globex, 3, "read_notes", {"session": handle})
        assert foreign["error"]["code"] == -31001, foreign

    def usage() -> dict[str, int] | None:
        shown = local_ops(first, "usage", "show", "--tenant", "acme")
        assert shown.returncode == 0, shown.stderr
        totals: dict[str, int] = json.loads(shown.stdout.splitlines()[-1])["quota_totals"]
        rows = [json.loads(line) for line in shown.stdout.splitlines()[:-1]]
        return totals if sum(row["calls"] for row in rows) == 2 else None

    wait_for(usage, 60, "ingest to count acme's two calls")

    def trail() -> list[dict[str, Any]] | None:
        listed = local_ops(first, "audit", "tenant", "acme")
        assert listed.returncode == 0, listed.stderr
        records = [json.loads(line) for line in listed.stdout.splitlines()]
        return records if any(r["item"].startswith(ts.TOOL_RECORD_PREFIX) for r in records) else None

    records = wait_for(trail, 60, "audit to record acme's session")
    assert {record["session_id"] for record in records} == {handle}
    assert local_ops(first, "audit", "tenant", "globex").stdout == ""  # globex made no session
