"""What a deployment costs a month idle, per configuration: each one synthesized offline (as the
infra tests do), its templates walked by ``cost.idle_costs`` at the prices in bench/cost.py. And
where the minimal profile's one shard runs out, in tool calls at the event size the AWS-calls
suite measures.

``python bench/idle_cost.py`` prints both tables; ``make bench`` prints them under the aws suite's.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
ROOT = Path(__file__).resolve().parents[1]
for _extra in (ROOT / "layers/platform/python", ROOT, ROOT / "bench"):
    if str(_extra) not in sys.path:
        sys.path.insert(0, str(_extra))

import cost  # noqa: E402

from stacks.config import PROFILES  # noqa: E402
from stacks.shard_planner import (  # noqa: E402
    SECONDS_PER_MONTH,
    SHARD_BYTES_PER_S,
    SHARD_RECORDS_PER_S,
    Workload,
    plan,
)

# (label, CDK context): the default, without DAX, the minimal profile with and without the task
# worker, and the minimal profile behind CloudFront (its web ACL is in the us-east-1 stack).
CONFIGURATIONS: tuple[tuple[str, dict[str, str]], ...] = (
    ("default (dax, ON_DEMAND stream, fan-out)", {}),
    ("dax=false", {"dax": "false"}),
    (
        "dax=false, one PROVISIONED shard (168 h, fan-out)",
        {"dax": "false", "stream_mode": "PROVISIONED", "shard_count": "1"},
    ),
    ("profile=minimal", {"profile": "minimal"}),
    ("profile=minimal, tasks=false", {"profile": "minimal", "tasks": "false"}),
    ("profile=minimal, edge=cloudfront", {"profile": "minimal", "edge": "cloudfront", "region": "eu-west-1"}),
)
# A shared-throughput shard serves 2 MB/s and 5 GetRecords calls a second to all its readers
# together; the ingest mapping polls each shard once a second.
SHARD_READ_BYTES_PER_S = 2_000_000
SHARD_READS_PER_S = 5
MAPPING_READS_PER_S = 1


@functools.cache
def templates(context_json: str) -> tuple[dict[str, Any], ...]:
    """Every stack template of the app synthesized with ``context`` (JSON text: a cache key), once
    per process; no bundling (the layer is hashed, pip never runs) and no cdk-nag (tests run it)."""
    from stacks.app_builder import build_app  # deferred: importing aws_cdk starts the jsii runtime

    context = {"aws:cdk:bundling-stacks": [], **json.loads(context_json)}
    with tempfile.TemporaryDirectory(prefix="mcp-idle-synth-") as outdir:
        app, _ = build_app(context, nag=False, outdir=outdir)
        assembly = app.synth()
        return tuple(json.loads((Path(outdir) / stack.template_file).read_text()) for stack in assembly.stacks)


def idle_costs() -> list[cost.IdleCost]:
    return [cost.idle_costs(label, templates(json.dumps(context, sort_keys=True))) for label, context in CONFIGURATIONS]


def idle_table() -> list[list[str]]:
    return cost.idle_table(idle_costs())


def unpriced() -> dict[str, tuple[str, ...]]:
    """Resource types a configuration holds that are neither priced nor known free, by configuration."""
    return {c.configuration: c.unpriced for c in idle_costs() if c.unpriced}


def minimal_limits(event_bytes: int, events_per_call: int = 1) -> list[list[str]]:
    """Where one shard (the minimal profile) runs out, for tool calls that each put
    ``events_per_call`` records of ``event_bytes`` (data and partition key): a header, then one
    line per limit with calls per second and per month (30.4 days at that rate)."""
    shards = int(PROFILES["minimal"]["shard_count"])
    retention = int(PROFILES["minimal"]["retention_hours"])
    per_call = event_bytes * events_per_call
    limits = [
        ("writes: 1,000 records/s per shard", shards * SHARD_RECORDS_PER_S / events_per_call),
        ("writes: 1 MB/s per shard", shards * SHARD_BYTES_PER_S / per_call),
        ("reads: 2 MB/s per shard, shared by every reader", shards * SHARD_READ_BYTES_PER_S / per_call),
        (
            "the K6 shard plan asks for a second shard (85 % utilisation)",
            _largest_rate_for_one_shard(event_bytes, events_per_call),
        ),
    ]
    lines = [["limit", "tool calls/s", "tool calls a month"]]
    lines += [[name, f"{rate:,.0f}", f"{rate * SECONDS_PER_MONTH / 1e6:,.0f} M"] for name, rate in limits]
    # On-demand against the one shard, both without a fan-out consumer: at rest and at the K6 capacity.
    capacity = _largest_rate_for_one_shard(event_bytes, events_per_call)
    workload = Workload(capacity * events_per_call, max(1, event_bytes), retention_hours=retention, consumers=0)
    full = plan(workload, cost._KINESIS)
    at_rest = plan(Workload(1e-9, max(1, event_bytes), retention_hours=retention, consumers=0), cost._KINESIS)
    cheaper_throughout = (
        at_rest.provisioned_usd_month <= at_rest.on_demand_usd_month
        and full.provisioned_usd_month <= full.on_demand_usd_month
    )
    if cheaper_throughout:  # both are affine in the rate: cheaper at both ends is cheaper between
        verdict = "never: one shard costs less than ON_DEMAND at every rate it carries"
    else:
        even = full.break_even_avg_records_per_s or 0.0
        verdict = f"{even / events_per_call:,.1f} tool calls/s average"
    lines.append(
        [
            f"cost at {capacity:,.0f} calls/s: one shard ${full.provisioned_usd_month:,.2f}, "
            f"ON_DEMAND ${full.on_demand_usd_month:,.2f} a month; break-even",
            verdict,
            "",
        ]
    )
    return lines


def _largest_rate_for_one_shard(event_bytes: int, events_per_call: int) -> float:
    """The peak tool calls/s at which the K6 planner still plans one shard."""
    bytes_limit = 0.85 * SHARD_BYTES_PER_S / max(1, event_bytes)
    records_limit = 0.85 * SHARD_RECORDS_PER_S
    return math.floor(min(bytes_limit, records_limit)) / events_per_call


def limits_notes() -> str:
    return (
        f"Reads: the ingest mapping polls each shard {MAPPING_READS_PER_S} time a second, of the "
        f"{SHARD_READS_PER_S} GetRecords calls a second a shard serves to all its shared-throughput readers; "
        "another application reading the stream the same way shares both the calls and the 2 MB/s (set "
        "`ingest_fan_out=true` to give ingest its own pipe). Cost: one shard at 24 h retention and no fan-out "
        "consumer against an ON_DEMAND stream at the same rate, with `python -m stacks.shard_planner`'s prices."
    )


def _text(title: str, table: list[list[str]]) -> str:
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    text = ["", title, ""]
    for n, line in enumerate(table):
        text.append(
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths, strict=True))
            )
        )
        if n == 0:
            text.append("-" * len(text[-1]))
    return "\n".join(text)


def text_tables(event_bytes: int | None = None, events_per_call: int = 1) -> str:
    """The idle table and its assumptions; with a measured event size, the one shard's limits too."""
    text = _text("What a deployment costs a month idle (USD)", idle_table()) + "\n\n" + cost.idle_assumptions()
    for configuration, types in unpriced().items():
        text += f"\nNOT PRICED in {configuration}: {', '.join(types)} (price them in bench/cost.py)"
    if event_bytes is not None:
        title = f"Where profile=minimal's one shard runs out ({event_bytes} B per event, {events_per_call} per call)"
        text += "\n" + _text(title, minimal_limits(event_bytes, events_per_call)) + "\n\n" + limits_notes()
    return text


if __name__ == "__main__":
    print(text_tables())
