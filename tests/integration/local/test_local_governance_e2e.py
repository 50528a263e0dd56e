"""G1/G2 on `make dev`: MCP_RATE_LIMITS and MCP_QUOTAS become the stack's context, so the
limits table comes from the template and three real processes (the platform and two attached
endpoints) share its counters; the local ingest keeps the quota totals, and `python -m local.ops
usage` shows and resets them."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import pytest

from mcp_platform.protocol.jsonrpc import QUOTA_EXCEEDED, RATE_LIMITED
from tests.support.local_platform import ROOT, LocalPlatform, local_platform, wait_for
from tests.support.mcp_http import CAPS_META, modern_call

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_governance")]
LIMIT = 8
QUOTA = LIMIT  # reached as the window fills: a call late in the burst may meet either
RULES = {
    "MCP_RATE_LIMITS": json.dumps({"principal": f"{LIMIT}/hour"}),
    "MCP_QUOTAS": json.dumps({"principal": f"{QUOTA}/day"}),
}
# The endpoints read the quota totals through the one local DAX item cache, as on AWS: a quota
# holds once the cache's copy of the totals has expired (a soft bound, see the governance page).
ITEM_TTL_S = 2
PLATFORM_ENV = {**RULES, "LOCAL_DAX_ITEM_TTL_SECONDS": str(ITEM_TTL_S)}
ECHO = {"name": "echo", "arguments": {"text": "hi"}, "_meta": CAPS_META}
PRINCIPAL = "local-developer"  # every dev key's principal (local/platform.py)


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[LocalPlatform]]:
    with ExitStack() as stack:
        first = stack.enter_context(local_platform(tmp_path_factory.mktemp("governed"), env=PLATFORM_ENV))
        attach = {**PLATFORM_ENV, "LOCAL_AWS_PORT": first.aws_url.rsplit(":", 1)[1]}
        others = [
            stack.enter_context(local_platform(tmp_path_factory.mktemp(f"attached{n}"), env=attach, args=["--attach"]))
            for n in range(2)
        ]
        yield [first, *others]


def local_ops(platform: LocalPlatform, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LOCAL_AWS_PORT": platform.aws_url.rsplit(":", 1)[1], **RULES}
    return subprocess.run(
        [sys.executable, "-m", "local.ops", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_limits_and_quotas_hold_over_three_processes_and_the_operator_resets_a_quota(
    three: list[LocalPlatform],
) -> None:
    """Given principal: 8/hour and 8/day on `make dev` plus two attached endpoints, when 24
    calls are spread over the three processes at once, then 8 run and 16 are refused (-31008, or
    -31009 once ingest has counted the 8);
    once ingest has counted them, `usage show` reports 8 today and the next call is refused
    -31009 naming the day quota; after `usage reset --day --yes` the refusal is the rate limit's
    again (its window is still full)."""
    banner = three[0].log_path.read_text()
    assert f'Governance     rate limits {{"principal":"{LIMIT}/hour"}}' in banner  # as the template has it
    started = int(time.time() // 3600)
    targets = itertools.cycle(three)
    calls = [(next(targets), n) for n in range(3 * LIMIT)]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda c: modern_call(c[0].mcp_url, c[0].api_key, c[1], "tools/call", ECHO), calls))
    if int(time.time() // 3600) != started:
        pytest.skip("the run straddled an hour window")
    statuses = [answer.status_code for answer in answers]
    assert (statuses.count(200), statuses.count(429)) == (LIMIT, 2 * LIMIT), statuses
    assert {a.json()["error"]["code"] for a in answers if a.status_code == 429} <= {RATE_LIMITED, QUOTA_EXCEEDED}

    def counted() -> dict[str, int] | None:
        shown = local_ops(three[0], "usage", "show", PRINCIPAL)
        assert shown.returncode == 0, shown.stderr
        totals: dict[str, int] = json.loads(shown.stdout.splitlines()[-1])["quota_totals"]
        return totals if totals.get("today_calls") == LIMIT else None

    totals = wait_for(counted, 60, "ingest to count the calls into the quota totals")
    assert totals["month_calls"] == LIMIT
    time.sleep(ITEM_TTL_S + 0.5)  # the item cache's copy of the totals, read during the burst, has expired
    refused = modern_call(three[1].mcp_url, three[1].api_key, 99, "tools/call", ECHO)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == QUOTA_EXCEEDED
    assert refused.json()["error"]["data"]["quota"] == "principal:day"
    reset = local_ops(three[0], "usage", "reset", PRINCIPAL, "--day", "--yes")
    assert reset.returncode == 0, reset.stderr
    again = modern_call(three[2].mcp_url, three[2].api_key, 100, "tools/call", ECHO)
    assert again.status_code == 429 and again.json()["error"]["code"] == RATE_LIMITED
