"""G1/G2: which rules a request counts against, when it is refused and what the refusal says."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from mcp_platform.application.auth.base import Principal
from mcp_platform.application.blocking import INLINE
from mcp_platform.application.governance.admission import (
    Governor,
    QuotaExceeded,
    RateLimited,
    refusal_error,
)
from mcp_platform.application.governance.ports import PeriodCalls
from mcp_platform.application.governance.rules import parse_quotas, parse_rate_limits
from mcp_platform.protocol.clock import ManualClock
from mcp_platform.protocol.jsonrpc import QUOTA_EXCEEDED, RATE_LIMITED
from tests.support.governance import FixedUsage, InMemoryRateCounters

ALICE = Principal(id="alice", kind="api_key")
BOB = Principal(id="bob", kind="oauth", scopes=frozenset(), client_id="cli-1")
# 2026-12-07T12:00:10Z: ten seconds into a minute window.
NOON = datetime(2026, 12, 7, 12, 0, 10, tzinfo=UTC).timestamp()


def governor(rates: str = "", quotas: str = "", usage: FixedUsage | None = None) -> Governor:
    return Governor(
        rate_rules=parse_rate_limits(rates),
        quota_rules=parse_quotas(quotas),
        counters=InMemoryRateCounters(),
        usage=usage or FixedUsage(),
        clock=ManualClock(NOON),
        blocking=INLINE,
    )


def admit(gov: Governor, caller: Principal, tool: str | None = None) -> None:
    asyncio.run(gov.admit(caller, tool=tool))


def test_a_principal_limit_counts_each_principal_apart_and_refuses_the_next_request() -> None:
    """Given principal: 3/minute, when alice makes 4 requests, then the 4th is refused with the
    seconds left in the window, and bob still has his own 3."""
    gov = governor('{"principal": "3/minute"}')
    for _ in range(3):
        admit(gov, ALICE)
    with pytest.raises(RateLimited) as refused:
        admit(gov, ALICE)
    assert refused.value.rule.key == "principal" and refused.value.retry_after_seconds == 50
    for _ in range(3):
        admit(gov, BOB)


def test_the_window_resets_at_its_boundary() -> None:
    gov = governor('{"principal": "1/minute"}')
    admit(gov, ALICE)
    with pytest.raises(RateLimited):
        admit(gov, ALICE)
    assert isinstance(gov.clock, ManualClock)
    gov.clock.advance(50)  # 12:01:00: a new window
    admit(gov, ALICE)


def test_a_tool_limit_counts_that_tools_calls_from_everyone_and_nothing_else() -> None:
    """Given tool:search: 2/minute, then two calls of search (any callers) fill it; other tools
    and other methods are not counted."""
    gov = governor('{"tool:search": "2/minute"}')
    admit(gov, ALICE, "search")
    admit(gov, BOB, "search")
    for _ in range(5):
        admit(gov, ALICE, "echo")
        admit(gov, ALICE)
    with pytest.raises(RateLimited) as refused:
        admit(gov, BOB, "search")
    assert refused.value.rule.key == "tool:search"


def test_a_refused_request_uses_up_no_other_rules_room() -> None:
    """Given principal: 5/minute and tool:search: 1/minute, when alice's second search is
    refused by the tool rule, then it did not count against her principal limit."""
    gov = governor('{"principal": "5/minute", "tool:search": "1/minute"}')
    admit(gov, ALICE, "search")
    for _ in range(3):
        with pytest.raises(RateLimited, match="tool:search"):
            admit(gov, ALICE, "search")
    for _ in range(4):
        admit(gov, ALICE)  # 1 + 4 = 5: the refused searches left her room
    with pytest.raises(RateLimited, match="principal"):
        admit(gov, ALICE)


def test_a_client_limit_counts_oauth_clients_only() -> None:
    gov = governor('{"client": "1/minute"}')
    admit(gov, BOB)
    with pytest.raises(RateLimited, match="client"):
        admit(gov, Principal(id="carol", kind="oauth", client_id="cli-1"))  # same client, other user
    for _ in range(3):
        admit(gov, ALICE)  # an API key names no client


def test_a_quota_refuses_tool_calls_once_used_up_and_says_when_it_resets() -> None:
    """Given principal: 10/day and 100/month, when alice's usage reads 10 today, then her tool
    calls are refused until 00:00 UTC; bob's (9 today, 100 this month) by the month quota; other
    methods pass (quotas count tool calls)."""
    usage = FixedUsage(alice=PeriodCalls(day=10, month=40), bob=PeriodCalls(day=9, month=100))
    gov = governor(quotas='{"principal": "10/day", "principal:month": "100/month"}', usage=usage)
    with pytest.raises(QuotaExceeded) as refused:
        admit(gov, ALICE, "echo")
    assert refused.value.rule.period == "day"
    assert refused.value.resets_at == datetime(2026, 12, 8, tzinfo=UTC).timestamp()
    assert refused.value.retry_after_seconds == 12 * 3600 - 10
    with pytest.raises(QuotaExceeded) as monthly:
        admit(gov, BOB, "echo")
    assert monthly.value.resets_at == datetime(2027, 1, 1, tzinfo=UTC).timestamp()
    admit(gov, ALICE)  # not a tool call
    assert usage.reads == [("alice", "2026-12", "2026-12-07"), ("bob", "2026-12", "2026-12-07")]


def test_refusals_answer_the_documented_error_codes_and_data() -> None:
    gov = governor('{"principal": "1/minute"}', '{"principal": "1/day"}', FixedUsage(bob=PeriodCalls(day=1, month=1)))
    admit(gov, ALICE)
    with pytest.raises(RateLimited) as limited:
        admit(gov, ALICE)
    error = refusal_error(limited.value)
    assert (error.code, error.http_status) == (RATE_LIMITED, 429)
    assert error.data == {"limit": "principal", "allowed": "1/minute", "retryAfterSeconds": 50}
    with pytest.raises(QuotaExceeded) as used_up:
        admit(gov, BOB, "echo")
    error = refusal_error(used_up.value)
    assert (error.code, error.http_status) == (QUOTA_EXCEEDED, 429)
    assert error.data == {
        "quota": "principal:day",
        "allowed": "1/day",
        "resetsAt": "2026-12-08T00:00:00Z",
        "retryAfterSeconds": 43190,
    }


def test_the_facade_rules_count_only_their_endpoint() -> None:
    gov = governor('{"register": "2/hour", "principal": "1/minute"}')
    asyncio.run(gov.admit_facade("register", ""))
    asyncio.run(gov.admit_facade("register", ""))
    asyncio.run(gov.admit_facade("token", "cli-1"))  # no token rule
    with pytest.raises(RateLimited, match="register"):
        asyncio.run(gov.admit_facade("register", ""))
    admit(gov, ALICE)  # the principal's window is its own
