"""Shard planning and capacity-mode cost comparison (K6, K7), plus its command line.

    python -m stacks.shard_planner --peak-records-per-s 500 --avg-record-bytes 2048

Shards = max(ceil(peak x bytes / 1e6 / u), ceil(peak / (1000 x u))) with u = 0.85 target
utilisation (15 % headroom for retry bursts). Costs are monthly (730 h) list prices for
us-east-1 as defaults, every one overridable. The break-even is solved, not guessed: with the
shard count fixed by the peak, both modes cost ``fixed + slope x volume``, so the average
records/s where they meet is (fixed_provisioned - fixed_on_demand) / (slope_od - slope_prov).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, fields

HOURS_PER_MONTH = 730
SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600
GB = 1024**3
PUT_UNIT_BYTES = 25 * 1024
ON_DEMAND_BILLING_UNIT = 1024  # on-demand bills each record rounded up to 1 KB
SHARD_BYTES_PER_S = 1_000_000
SHARD_RECORDS_PER_S = 1000
DEFAULT_RETENTION_HOURS = 168  # K7


@dataclass(frozen=True)
class Pricing:
    """USD, us-east-1 list prices; pass current ones with --price-<name>."""

    shard_hour: float = 0.015
    put_units_per_million: float = 0.014
    extended_retention_shard_hour: float = 0.02  # 24 h < retention ≤ 7 days, provisioned
    long_term_retention_gb_month: float = 0.023  # beyond 7 days, both modes
    efo_consumer_shard_hour: float = 0.015
    efo_retrieval_gb: float = 0.013
    on_demand_stream_hour: float = 0.04
    on_demand_in_gb: float = 0.08
    on_demand_out_gb: float = 0.04  # shared-throughput reads
    on_demand_efo_out_gb: float = 0.05
    on_demand_extended_retention_gb_month: float = 0.10


@dataclass(frozen=True)
class Workload:
    peak_records_per_s: float
    avg_record_bytes: int
    avg_records_per_s: float | None = None  # monthly volume; defaults to the peak
    retention_hours: int = DEFAULT_RETENTION_HOURS
    consumers: int = 1  # enhanced fan-out consumers (K5: the ingest function)
    target_utilization: float = 0.85

    def __post_init__(self) -> None:
        if self.peak_records_per_s <= 0 or self.avg_record_bytes <= 0:
            raise ValueError("peak records/s and average record bytes must be > 0")
        if not 24 <= self.retention_hours <= 8760:
            raise ValueError("retention must be between 24 and 8760 hours")
        if not 0 < self.target_utilization <= 1:
            raise ValueError("target utilisation must be in (0, 1]")

    @property
    def average(self) -> float:
        return self.peak_records_per_s if self.avg_records_per_s is None else self.avg_records_per_s


def shard_count(w: Workload) -> int:
    by_bytes = math.ceil(w.peak_records_per_s * w.avg_record_bytes / SHARD_BYTES_PER_S / w.target_utilization)
    by_records = math.ceil(w.peak_records_per_s / (SHARD_RECORDS_PER_S * w.target_utilization))
    return max(1, by_bytes, by_records)


def _stored_gb(w: Workload, records_per_s: float, from_h: float, to_h: float) -> float:
    """GB at rest on average for data aged between from_h and to_h hours."""
    hours = max(0.0, min(w.retention_hours, to_h) - from_h)
    return records_per_s * w.avg_record_bytes * hours * 3600 / GB


def _provisioned(w: Workload, p: Pricing, shards: int, rps: float) -> float:
    records = rps * SECONDS_PER_MONTH
    cost = shards * HOURS_PER_MONTH * p.shard_hour
    cost += records * math.ceil(w.avg_record_bytes / PUT_UNIT_BYTES) / 1e6 * p.put_units_per_million
    if w.retention_hours > 24:
        cost += shards * HOURS_PER_MONTH * p.extended_retention_shard_hour
    cost += _stored_gb(w, rps, 168, 8760) * p.long_term_retention_gb_month
    cost += w.consumers * shards * HOURS_PER_MONTH * p.efo_consumer_shard_hour
    cost += w.consumers * records * w.avg_record_bytes / GB * p.efo_retrieval_gb
    return cost


def _on_demand(w: Workload, p: Pricing, rps: float) -> float:
    billed_gb = rps * SECONDS_PER_MONTH * math.ceil(w.avg_record_bytes / ON_DEMAND_BILLING_UNIT) * 1024 / GB
    cost = HOURS_PER_MONTH * p.on_demand_stream_hour + billed_gb * p.on_demand_in_gb
    cost += w.consumers * billed_gb * p.on_demand_efo_out_gb
    cost += _stored_gb(w, rps, 24, 168) * p.on_demand_extended_retention_gb_month
    cost += _stored_gb(w, rps, 168, 8760) * p.long_term_retention_gb_month
    return cost


@dataclass(frozen=True)
class Plan:
    shards: int
    provisioned_usd_month: float
    on_demand_usd_month: float
    break_even_avg_records_per_s: float | None  # on-demand is cheaper below this average
    recommended_mode: str

    def cdk_context(self, retention_hours: int) -> str:
        mode = f"-c stream_mode={self.recommended_mode}"
        shards = f" -c shard_count={self.shards}" if self.recommended_mode == "PROVISIONED" else ""
        return f"{mode}{shards} -c retention_hours={retention_hours}"


def plan(w: Workload, p: Pricing | None = None) -> Plan:
    p = p or Pricing()
    shards = shard_count(w)
    prov = _provisioned(w, p, shards, w.average)
    od = _on_demand(w, p, w.average)
    # Both costs are affine in the average rate; two evaluations give fixed part and slope.
    prov_fixed, od_fixed = _provisioned(w, p, shards, 0.0), _on_demand(w, p, 0.0)
    prov_slope, od_slope = _provisioned(w, p, shards, 1.0) - prov_fixed, _on_demand(w, p, 1.0) - od_fixed
    break_even = None
    if od_slope > prov_slope:
        break_even = max(0.0, (prov_fixed - od_fixed) / (od_slope - prov_slope))
    return Plan(shards, prov, od, break_even, "PROVISIONED" if prov <= od else "ON_DEMAND")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stacks.shard_planner", description=__doc__)
    parser.add_argument("--peak-records-per-s", type=float, required=True)
    parser.add_argument("--avg-record-bytes", type=int, required=True)
    parser.add_argument("--avg-records-per-s", type=float, default=None, help="monthly average (default: the peak)")
    parser.add_argument("--retention-hours", type=int, default=DEFAULT_RETENTION_HOURS)
    parser.add_argument("--consumers", type=int, default=1, help="enhanced fan-out consumers")
    parser.add_argument("--target-utilization", type=float, default=0.85)
    for f in fields(Pricing):
        parser.add_argument(f"--price-{f.name.replace('_', '-')}", type=float, default=f.default, dest=f.name)
    args = parser.parse_args(argv)
    pricing = Pricing(**{f.name: getattr(args, f.name) for f in fields(Pricing)})
    try:
        w = Workload(
            args.peak_records_per_s,
            args.avg_record_bytes,
            args.avg_records_per_s,
            args.retention_hours,
            args.consumers,
            args.target_utilization,
        )
    except ValueError as exc:
        parser.error(str(exc))
    result = plan(w, pricing)
    mb_s = w.peak_records_per_s * w.avg_record_bytes / 1e6
    print(f"peak write        {w.peak_records_per_s:g} records/s x {w.avg_record_bytes} B = {mb_s:.3f} MB/s")
    print(f"shards (K6)       {result.shards}  (target utilisation {w.target_utilization:.0%})")
    print(f"provisioned       ${result.provisioned_usd_month:,.2f} / month")
    print(f"on-demand         ${result.on_demand_usd_month:,.2f} / month")
    if result.break_even_avg_records_per_s is None:
        print("break-even        none: on-demand never costs more per record than provisioned here")
    else:
        print(
            f"break-even        {result.break_even_avg_records_per_s:,.1f} records/s average "
            f"(on-demand cheaper below, provisioned above)"
        )
    print(f"recommended       {result.recommended_mode}")
    print(f"cdk context       {result.cdk_context(w.retention_hours)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
