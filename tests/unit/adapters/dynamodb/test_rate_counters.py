"""G1/G2 on the table: window counters decided by DynamoDB's conditions, all or none, and the
quota totals ingest keeps, read back."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.adapters.dynamodb.rate_counters import DynamoRateCounters, DynamoUsageTotals
from mcp_platform.application.governance.ports import CountersUnavailable, PeriodCalls, WindowHit
from mcp_platform.application.governance.rules import RateRule
from tests.support.governance import create_limits_table

PRINCIPAL = RateRule("principal", 3, "minute")
SEARCH = RateRule("tool:search", 1, "minute")
WINDOW = 1_800_000_000 - 1_800_000_000 % 60


@pytest.fixture
def limits(ddb: Any) -> str:
    name = f"limits-{uuid.uuid4().hex[:8]}"
    create_limits_table(ddb, name)
    return name


def count(ddb: Any, table: str, hit: WindowHit) -> dict[str, Any]:
    pk = ts.rate_window_pk(hit.rule.key, hit.rule.period, hit.window_start, hit.subject)
    item: dict[str, Any] = ddb.get_item(TableName=table, Key={ts.PK: {"S": pk}}, ConsistentRead=True).get("Item", {})
    return item


def test_a_window_admits_its_limit_then_refuses_without_counting(ddb: Any, limits: str) -> None:
    """Given principal: 3/minute, when alice's window is hit 5 times, then 3 are counted, the
    last two refused (the same hit returned), the count stays 3, and the item expires a minute
    after its window ends."""
    counters = DynamoRateCounters(ddb, limits)
    hit = WindowHit(PRINCIPAL, "alice", WINDOW)
    outcomes = [counters.take([hit]) for _ in range(5)]
    assert outcomes == [None, None, None, hit, hit]
    item = count(ddb, limits, hit)
    assert item[ts.RATE_COUNT] == {"N": "3"}
    assert item[ts.TTL] == {"N": str(WINDOW + 60 + 60)}
    assert counters.take([WindowHit(PRINCIPAL, "bob", WINDOW)]) is None  # bob's own window


def test_several_rules_are_counted_all_or_none_and_the_full_one_is_named(ddb: Any, limits: str) -> None:
    """Given principal: 3/minute and tool:search: 1/minute, when alice searches twice, then the
    second is refused naming the tool rule and her principal window counted only the first."""
    counters = DynamoRateCounters(ddb, limits)
    mine, tool = WindowHit(PRINCIPAL, "alice", WINDOW), WindowHit(SEARCH, "", WINDOW)
    assert counters.take([mine, tool]) is None
    assert counters.take([mine, tool]) == tool
    assert count(ddb, limits, mine)[ts.RATE_COUNT] == {"N": "1"}
    assert count(ddb, limits, tool)[ts.RATE_COUNT] == {"N": "1"}


def test_a_long_subject_is_counted_by_its_digest(ddb: Any, limits: str) -> None:
    counters = DynamoRateCounters(ddb, limits)
    url = "https://client.example/" + "x" * 2000  # a client ID metadata document URL
    hit = WindowHit(RateRule("client", 1, "hour"), url, 1_800_000_000 - 1_800_000_000 % 3600)
    assert counters.take([hit]) is None and counters.take([hit]) == hit
    assert "sha256:" in ts.rate_window_pk("client", "hour", hit.window_start, url)


class Failing:
    """A client whose every call fails as ``error`` (what moto cannot produce)."""

    def __init__(self, code: str, reasons: list[str] | None = None) -> None:
        response: dict[str, Any] = {"Error": {"Code": code, "Message": code}}
        if reasons is not None:
            response["CancellationReasons"] = [{"Code": reason} for reason in reasons]
        self.error = ClientError(response, "Op")  # type: ignore[arg-type]
        self.calls = 0

    def update_item(self, **_: Any) -> None:
        self.calls += 1
        raise self.error

    transact_write_items = update_item


@pytest.mark.parametrize(
    "failing",
    [
        Failing("ProvisionedThroughputExceededException"),
        Failing("InternalServerError"),
        Failing("TransactionCanceledException", ["TransactionConflict", "None"]),
    ],
)
def test_an_aws_failure_leaves_the_adapter_as_the_ports_error(failing: Failing) -> None:
    """Given counters that throttle, fail or keep conflicting, when taken, then the port's
    CountersUnavailable is raised (never an SDK error), after the conflict retries."""
    counters = DynamoRateCounters(failing, "limits", sleep=lambda _: None)
    hits = [WindowHit(PRINCIPAL, "alice", WINDOW), WindowHit(SEARCH, "", WINDOW)]
    with pytest.raises(CountersUnavailable):
        counters.take(hits if failing.error.response.get("CancellationReasons") else hits[:1])
    assert failing.calls == (4 if failing.error.response.get("CancellationReasons") else 1)


def test_the_quota_totals_read_the_month_and_the_day(ddb: Any, table: str) -> None:
    """Given the totals item ingest keeps, then one read answers the day's and month's calls;
    a principal with none has zero."""
    ddb.put_item(
        TableName=table,
        Item={
            ts.PK: {"S": ts.usage_pk("alice")},
            ts.SK: {"S": ts.usage_totals_sk("2026-12")},
            ts.USAGE_CALLS: {"N": "42"},
            ts.usage_day_attribute("2026-12-07"): {"N": "5"},
        },
    )
    totals = DynamoUsageTotals(DynamoGateway(ddb), table)
    assert totals.calls("alice", month="2026-12", day="2026-12-07") == PeriodCalls(day=5, month=42)
    assert totals.calls("alice", month="2026-12", day="2026-12-08") == PeriodCalls(day=0, month=42)
    assert totals.calls("bob", month="2026-12", day="2026-12-07") == PeriodCalls(day=0, month=0)
