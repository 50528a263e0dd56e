"""G1 across instances: three endpoint instances share one limits table, and a rate limit holds
over all of them together, on both protocol eras; the same scenario against a naive per-process
limiter (each instance counting in its own memory) admits three times the limit, which is what
these tests are shown to catch.

Windows are an hour long so that a run does not straddle two of them; each test checks that
its requests all fell into one window before asserting an exact count.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import httpx
import pytest

from mcp_platform.protocol.jsonrpc import RATE_LIMITED
from tests.support.endpoint import AwsStack, Instance, endpoint_instance, fresh_stack
from tests.support.governance import InMemoryRateCounters, create_limits_table
from tests.support.mcp_http import CAPS_META, call, final_message, initialize, modern_call

pytestmark = pytest.mark.integration

aws = pytest.fixture(fresh_stack, name="aws")
LIMIT = 12
REQUESTS = 36  # three instances x LIMIT: what a per-process limiter would admit


@pytest.fixture
def three(aws: AwsStack) -> Iterator[list[Instance]]:
    limits = f"limits-{uuid.uuid4().hex[:8]}"
    create_limits_table(aws.client("dynamodb"), limits)
    rules = f'{{"principal": "{LIMIT}/hour", "tool:countdown": "2/hour"}}'
    with ExitStack() as stack:
        yield [
            stack.enter_context(endpoint_instance(aws, MCP_RATE_LIMITS=rules, LIMITS_TABLE_NAME=limits))
            for _ in range(3)
        ]


@pytest.fixture
def keys(aws: AwsStack) -> dict[str, str]:
    from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore

    store = ApiKeyStore(aws.table, aws.client("dynamodb"))
    return {name: store.mint(name) for name in ("alice", "bob")}


def hour() -> int:
    return int(time.time() // 3600)


def spread(instances: list[Instance], send: Callable[[str, int], httpx.Response]) -> list[httpx.Response]:
    """REQUESTS requests at once, the next instance for each (as Lambda spreads them)."""
    urls = itertools.cycle([instance.url for instance in instances])
    targets = [(next(urls), n) for n in range(REQUESTS)]
    with ThreadPoolExecutor(12) as pool:
        return list(pool.map(lambda target: send(*target), targets))


def echo_2026(key: str) -> Callable[[str, int], httpx.Response]:
    echo = {"name": "echo", "arguments": {"text": "hi"}, "_meta": CAPS_META}
    return lambda url, n: modern_call(url, key, n, "tools/call", echo)


def assert_limited(responses: list[httpx.Response], admitted: int) -> None:
    """``admitted`` answers succeeded; every other one is the documented refusal."""
    ok = [r for r in responses if r.status_code == 200]
    refused = [r for r in responses if r.status_code == 429]
    assert (len(ok), len(refused)) == (admitted, len(responses) - admitted), [r.status_code for r in responses]
    for response in refused:
        error = response.json()["error"]
        assert error["code"] == RATE_LIMITED and error["data"]["limit"] == "principal"
        assert error["data"]["allowed"] == f"{LIMIT}/hour"
        seconds = int(response.headers["retry-after"])
        assert 1 <= seconds <= 3600 and error["data"]["retryAfterSeconds"] == seconds


def test_a_principal_limit_holds_across_three_instances_in_2026(three: list[Instance], keys: dict[str, str]) -> None:
    """Given principal: 12/hour on three instances, when alice sends 36 concurrent 2026
    tools/call requests spread over them, then exactly 12 are admitted and 24 answered 429 with
    Retry-After and -31008; bob, another principal, still gets his 12."""
    started = hour()
    responses = spread(three, echo_2026(keys["alice"]))
    if hour() != started:
        pytest.skip("the run straddled an hour window")
    assert_limited(responses, LIMIT)
    assert all(final_message(r)["result"]["content"][0]["text"] == "hi" for r in responses if r.status_code == 200)
    bobs = spread(three, echo_2026(keys["bob"]))
    if hour() == started:
        assert_limited(bobs, LIMIT)


def test_a_principal_limit_holds_across_three_instances_in_2025(three: list[Instance], keys: dict[str, str]) -> None:
    """Given the same rule, when alice opens a 2025 session (initialize counts as a request) and
    sends 36 concurrent requests on it over the three instances, then 11 more are admitted; the
    refusals are HTTP 429 with the JSON-RPC error, as in 2026."""
    started = hour()
    session = initialize(three[0].url, keys["alice"])
    responses = spread(three, lambda url, n: call(url, keys["alice"], session, n, "tools/list"))
    if hour() != started:
        pytest.skip("the run straddled an hour window")
    assert_limited(responses, LIMIT - 1)


def test_a_tool_limit_counts_that_tools_calls_from_every_caller(three: list[Instance], keys: dict[str, str]) -> None:
    """Given tool:countdown: 2/hour, when alice and bob call it three times each over the
    instances, then two calls run in all, the rest are refused naming the tool rule; echo and
    the principals' other requests are not counted by it."""
    countdown = {"name": "countdown", "arguments": {"steps": 1, "interval_ms": 1}, "_meta": CAPS_META}
    answers = [
        modern_call(three[n % 3].url, keys[name], n, "tools/call", countdown)
        for n, name in enumerate(["alice", "bob"] * 3)
    ]
    assert [a.status_code for a in answers].count(200) == 2
    for refused in [a for a in answers if a.status_code == 429]:
        assert refused.json()["error"]["data"]["limit"] == "tool:countdown"
    echo = {"name": "echo", "arguments": {"text": "x"}, "_meta": CAPS_META}
    assert modern_call(three[0].url, keys["alice"], 99, "tools/call", echo).status_code == 200


def test_a_naive_per_process_limiter_admits_three_times_the_limit(three: list[Instance], keys: dict[str, str]) -> None:
    """The control: the same 36 requests against instances that each count in their own memory
    are all admitted (12 per instance), so the tests above tell a shared limiter from it."""
    for instance in three:
        governor = instance.endpoint.governor
        instance.endpoint.governor = dataclasses.replace(governor, counters=InMemoryRateCounters())
    started = hour()
    responses = spread(three, echo_2026(keys["alice"]))
    if hour() != started:
        pytest.skip("the run straddled an hour window")
    assert [r.status_code for r in responses].count(200) == REQUESTS


def test_each_refusal_is_counted_per_rule_for_the_dashboard(three: list[Instance], keys: dict[str, str]) -> None:
    """Given the rules, when alice's calls of countdown pass its limit, then each refusal is an EMF
    count of mcp.server.governance.refused per rule (the dashboard's "refused" graph)."""
    import io
    import json

    from mcp_platform.application.metrics import GOVERNANCE_REFUSALS, GOVERNANCE_RULE, MetricsWriter

    stream = io.StringIO()
    three[0].endpoint.streamer.metrics = MetricsWriter("McpPlatform", "mcp-endpoint", stream)
    countdown = {"name": "countdown", "arguments": {"steps": 1, "interval_ms": 1}, "_meta": CAPS_META}
    statuses = [modern_call(three[0].url, keys["alice"], n, "tools/call", countdown).status_code for n in range(4)]
    assert statuses.count(429) == 2
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    refusals = [line for line in lines if GOVERNANCE_REFUSALS in line]
    assert [(line[GOVERNANCE_REFUSALS], line[GOVERNANCE_RULE]) for line in refusals] == [(1, "tool:countdown")] * 2
