"""make bench's governance rows (bench_aws_calls): each governed operation, counted on moto, adds
to the same operation without rules exactly the calls its rules need (counts, never timings),
and the budget check says so; a call beyond the budget is reported as over it."""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytestmark = pytest.mark.integration

BENCH = Path(__file__).resolve().parents[3] / "bench"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """The suite, measured once for the module with one priced run per operation (counts only)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCH))
        module: ModuleType = importlib.import_module("bench_aws_calls")
        patch.setattr(module, "COST_RUNS", 1)
        module.measure.cache_clear()
        yield module
        module.measure.cache_clear()


@pytest.fixture(scope="module")
def checks(bench: ModuleType) -> dict[str, Any]:
    return {check.governed.label: check for check in bench.governance_checks()}


def units(usage: Any) -> tuple[float, float]:
    return usage.read_units, usage.write_units


def added_units(check: Any) -> tuple[float, float]:
    (governed_read, governed_write), (peer_read, peer_write) = units(check.governed.usage), units(check.peer.usage)
    return governed_read - peer_read, governed_write - peer_write


def added_ingest_write_units(check: Any) -> float:
    return float(check.governed.ingest.write_units - check.peer.ingest.write_units)


def test_each_rule_adds_the_calls_it_needs_and_no_more(bench: ModuleType, checks: dict[str, Any]) -> None:
    # Given every governed operation measured beside its peer (the same operation, no rule)
    assert set(checks) == {
        bench.PRINCIPAL_LIMIT.label,
        bench.PRINCIPAL_AND_TOOL_LIMITS.label,
        bench.DAY_QUOTA.label,
        bench.SESSION_TOOL_LIMIT_AND_QUOTA.label,
        bench.SESSION_2025_LIMIT.label,
    }
    # Then a principal limit adds one conditional UpdateItem of the small counter item: 1 write unit
    principal = checks[bench.PRINCIPAL_LIMIT.label]
    assert principal.extra_calls == Counter({"dynamodb.UpdateItem": 1}) and not principal.missing_calls
    assert added_units(principal) == (0, 1)
    assert not principal.extra_ingest
    # And a principal and a tool limit count both windows in one transaction of two Updates: 2 x 2 units
    both = checks[bench.PRINCIPAL_AND_TOOL_LIMITS.label]
    assert both.extra_calls == Counter({"dynamodb.TransactWriteItems": 1})
    assert both.extra_actions == Counter({"Update": 2})
    assert added_units(both) == (0, 4)
    # And a day quota reads the usage totals once, eventually consistent (half a unit), while its
    # ingest adds to each batch's usage transaction one Update per principal (2 units, transactional)
    quota = checks[bench.DAY_QUOTA.label]
    batch = bench.cost.INGEST_BATCH_PRINCIPALS
    assert quota.extra_calls == Counter({"dynamodb.GetItem[cache]": 1})
    assert added_units(quota) == (0.5, 0)
    assert quota.extra_ingest == Counter({"Update": batch})
    assert added_ingest_write_units(quota) == 2 * batch
    # And a session tool under a limit and a quota adds both, its commit unchanged
    session = checks[bench.SESSION_TOOL_LIMIT_AND_QUOTA.label]
    assert session.extra_calls == Counter({"dynamodb.UpdateItem": 1, "dynamodb.GetItem[cache]": 1})
    # (its batch's 100 dedupe markers and counters take two transactions: the quota's Updates in each)
    transactions = session.governed.ingest.calls["dynamodb.TransactWriteItems"]
    assert not session.extra_actions and session.extra_ingest == Counter({"Update": batch * transactions})
    assert added_units(session) == (0.5, 1)
    # And a 2025 session tool under a principal limit adds the one UpdateItem
    legacy = checks[bench.SESSION_2025_LIMIT.label]
    assert legacy.extra_calls == Counter({"dynamodb.UpdateItem": 1}) and not legacy.extra_ingest
    # And every one of them is within the budget: one write per limited call, one read for a quota
    assert all(check.within_budget for check in checks.values())


def test_the_tables_show_the_governed_rows(bench: ModuleType, checks: dict[str, Any]) -> None:
    priced = [line[0] for line in bench.cost_table()[1:]]
    header, *lines = bench.governance_table()
    assert set(checks) <= set(priced)
    assert [line[0] for line in lines] == list(checks)
    assert {line[header.index("check")] for line in lines} == {"within"}
    budget_rows = [row for row in bench.run() if row["metric"].startswith("governance budget: ")]
    assert [row["metric"].removeprefix("governance budget: ") for row in budget_rows] == list(checks)
    assert all(row["note"].startswith("within budget") for row in budget_rows)


def test_a_call_beyond_the_budget_is_reported_over_it(bench: ModuleType) -> None:
    cost = bench.cost
    peer = bench.Measured("op", {"kinesis.PutRecords": 1}, "", cost.Usage(), cost.Usage())
    limit = bench.Governance("op", "principal rate limit", rate_limits=("principal",))

    def governed(calls: dict[str, int], ingest: Any = None) -> Any:
        measured = bench.Measured("op, limited", calls, "", cost.Usage(), ingest or cost.Usage(), limit)
        return bench.GovernanceCheck(measured, peer)

    one_write = {"kinesis.PutRecords": 1, "dynamodb.UpdateItem": 1}
    assert governed(one_write).within_budget
    assert not governed({**one_write, "dynamodb.PutItem": 1}).within_budget  # a second write
    assert not governed({**one_write, "dynamodb.GetItem[cache]": 1}).within_budget  # a read without a quota
    assert not governed({"dynamodb.UpdateItem": 1}).within_budget  # the peer's event not put
    ingest = cost.Usage(transact_actions=Counter({"Update": 1}))  # its batch's transactions
    assert not governed(one_write, ingest).within_budget  # ingest writes more without a quota
