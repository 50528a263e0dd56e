"""K6 shard planning and the on-demand / provisioned break-even (K7 retention bounds)."""

from __future__ import annotations

import math

import pytest

from stacks.shard_planner import Pricing, Workload, _on_demand, _provisioned, main, plan, shard_count


@pytest.mark.parametrize(
    ("peak", "size", "expected"),
    [
        (500, 2048, 2),  # 1.024 MB/s / 0.85 -> 2 (the seed's example)
        (100, 1000, 1),  # 0.1 MB/s -> at least one shard
        (10_000, 5000, math.ceil(50 / 0.85)),  # 50 MB/s
        (5000, 100, 6),  # 0.5 MB/s, but 5000 records/s needs ceil(5000/850) = 6 shards
    ],
)
def test_k6_shard_formula_respects_bytes_and_records_per_second(peak, size, expected):
    assert shard_count(Workload(peak, size)) == expected


def test_k6_break_even_is_where_both_monthly_costs_meet():
    # Given a workload sized by its peak
    w = Workload(2000, 1024, retention_hours=168, consumers=1)
    result = plan(w)
    assert result.break_even_avg_records_per_s is not None
    # When both modes are priced at the computed average rate
    rps = result.break_even_avg_records_per_s
    prov = _provisioned(w, Pricing(), result.shards, rps)
    od = _on_demand(w, Pricing(), rps)
    # Then they cost the same, on-demand is cheaper just below and dearer just above
    assert prov == pytest.approx(od, rel=1e-9)
    assert _on_demand(w, Pricing(), rps * 0.9) < _provisioned(w, Pricing(), result.shards, rps * 0.9)
    assert _on_demand(w, Pricing(), rps * 1.1) > _provisioned(w, Pricing(), result.shards, rps * 1.1)


def test_k6_recommendation_follows_the_cheaper_mode():
    steady = plan(Workload(500, 2048))  # busy all month
    spiky = plan(Workload(5000, 700, avg_records_per_s=50))  # rare peaks
    assert steady.recommended_mode == "PROVISIONED"
    assert spiky.recommended_mode == "ON_DEMAND"


def test_k6_prices_are_parameters():
    cheap_shards = plan(Workload(500, 2048), Pricing(shard_hour=0.0, extended_retention_shard_hour=0.0))
    assert cheap_shards.provisioned_usd_month < plan(Workload(500, 2048)).provisioned_usd_month


@pytest.mark.parametrize("hours", [23, 8761])
def test_k7_retention_outside_24_to_8760_hours_is_refused(hours):
    with pytest.raises(ValueError):
        Workload(100, 100, retention_hours=hours)


def test_k6_cli_prints_shards_costs_break_even_and_cdk_context(capsys):
    # When the command runs with a price override
    assert main(["--peak-records-per-s", "500", "--avg-record-bytes", "2048", "--price-shard-hour", "0.015"]) == 0
    out = capsys.readouterr().out
    # Then it prints the shard count, both costs, the break-even and the CDK context to use
    assert "shards (K6)       2" in out
    assert "provisioned       $" in out and "on-demand         $" in out
    assert "break-even" in out
    assert "-c stream_mode=PROVISIONED -c shard_count=2 -c retention_hours=168" in out
