"""G1/G2: rate limits and quotas as an operator writes them; a bad rule is refused naming it."""

from __future__ import annotations

import pytest

from mcp_platform.application.governance.rules import (
    QuotaRule,
    RateRule,
    RuleError,
    parse_quotas,
    parse_rate_limits,
    require_enforceable,
)


def test_rate_limits_are_read_from_json_text_or_a_mapping() -> None:
    """Given the documented example, when parsed as JSON text and as a mapping, then both give
    the same rules, with their windows in seconds and the tool a tool rule counts."""
    text = '{"principal": "60/minute", "tool:search": "10/minute", "register": "5/hour", "client": "2/second"}'
    rules = parse_rate_limits(text)
    assert rules == parse_rate_limits(
        {"principal": "60/minute", "tool:search": "10/minute", "register": "5/hour", "client": "2/second"}
    )
    assert rules[0] == RateRule(key="principal", limit=60, period="minute") and rules[0].seconds == 60
    assert rules[1].tool == "search" and rules[0].tool is None
    assert [rule.seconds for rule in rules[2:]] == [3600, 1]


@pytest.mark.parametrize("empty", [None, "", "  ", "{}", {}])
def test_no_rules_is_off(empty: object) -> None:
    assert parse_rate_limits(empty) == () and parse_quotas(empty) == ()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ('{"principal": "60/fortnight"}', "'principal'"),
        ('{"principal": "0/minute"}', "'principal'"),
        ('{"principal": 60}', "'principal'"),
        ('{"tool:": "1/minute"}', "'tool:'"),
        ('{"tool:has space": "1/minute"}', "'tool:has space'"),
        ('{"everyone": "1/minute"}', "'everyone'"),
        ('{"principal": "-1/minute"}', "'principal'"),
        ('{"principal": "60/month"}', "'principal'"),
        ("[1, 2]", "JSON object"),
        ("{not json", "JSON object"),
    ],
)
def test_a_bad_rate_limit_is_refused_naming_it(source: str, named: str) -> None:
    """Given a rule that cannot be enforced, when parsed, then RuleError names the rule."""
    with pytest.raises(RuleError, match=named):
        parse_rate_limits(source)


def test_quotas_per_day_and_month() -> None:
    """Given a day and a month quota for principals, then both are kept, the month named by suffix."""
    quotas = parse_quotas('{"principal": "1000/day", "principal:month": "20000/month"}')
    assert quotas == (QuotaRule("principal", 1000, "day"), QuotaRule("principal", 20000, "month"))


@pytest.mark.parametrize(
    "source",
    [
        '{"principal": "10/minute"}',
        '{"client": "10/day"}',
        '{"principal:day": "10/month"}',
        '{"principal": "10/day", "principal:day": "20/day"}',
    ],
)
def test_a_bad_quota_is_refused(source: str) -> None:
    with pytest.raises(RuleError, match="quota"):
        parse_quotas(source)


def test_rules_this_deployment_cannot_apply_are_refused() -> None:
    """Given a facade rule without the facade, then refused; tenant rules are accepted."""
    with pytest.raises(RuleError, match="facade"):
        require_enforceable(parse_rate_limits('{"token": "5/minute"}'), facade=False)
    require_enforceable(parse_rate_limits('{"token": "5/minute"}'), facade=True)  # accepted
    require_enforceable(parse_rate_limits('{"tenant": "5/minute"}'), facade=False)  # accepted
