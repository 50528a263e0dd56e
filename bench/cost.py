"""Cost per million calls: the prices and assumptions in one place, and the arithmetic.

What one operation consumes is counted and measured by the AWS-calls suite (bench_aws_calls.py):
its AWS requests, the DynamoDB read and write request units they use (from the sizes of the items
read and written), the Kinesis records it puts and the bytes of its log lines, and our own time
per invocation (the request's time in-process minus the time its AWS calls spent on the wire to
the local moto server). What cannot be measured here is assumed, and said so below: the round
trip of each AWS call from a Lambda function in the same region, the share of one vCPU a memory
size buys, and Lambda's own log lines.

Prices are list prices for one region (``REGION``), read from each service's pricing page (named
in the table) on 2026-12-01; free tiers are ignored. The Kinesis ones are the stream planner's
(``stacks.shard_planner.Pricing``), so the two never disagree.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field

from stacks.config import DEFAULTS
from stacks.endpoint import MEMORY_MB as ENDPOINT_MEMORY_MB
from stacks.processing import BATCH_SIZE as STREAM_BATCH_SIZE
from stacks.processing import MEMORY_MB as INGEST_MEMORY_MB
from stacks.shard_planner import GB, ON_DEMAND_BILLING_UNIT, PUT_UNIT_BYTES, Pricing

REGION = "us-east-1"
LAMBDA_PAGE = "https://aws.amazon.com/lambda/pricing/"
DYNAMODB_PAGE = "https://aws.amazon.com/dynamodb/pricing/on-demand/"
KINESIS_PAGE = "https://aws.amazon.com/kinesis/data-streams/pricing/"
SQS_PAGE = "https://aws.amazon.com/sqs/pricing/"
SECRETS_PAGE = "https://aws.amazon.com/secrets-manager/pricing/"
CLOUDWATCH_PAGE = "https://aws.amazon.com/cloudwatch/pricing/"
XRAY_PAGE = "https://aws.amazon.com/xray/pricing/"
CLOUDFRONT_PAGE = "https://aws.amazon.com/cloudfront/pricing/"
WAF_PAGE = "https://aws.amazon.com/waf/pricing/"
API_GATEWAY_PAGE = "https://aws.amazon.com/api-gateway/pricing/"
DATA_TRANSFER_PAGE = "https://aws.amazon.com/ec2/pricing/on-demand/"


@dataclass(frozen=True)
class Price:
    usd: float
    per: str
    source: str


_KINESIS = Pricing()
PRICES: dict[str, Price] = {
    "lambda requests": Price(0.20, "million requests", LAMBDA_PAGE),
    "lambda duration arm64": Price(0.0000133334, "GB-second", LAMBDA_PAGE),
    "lambda duration x86_64": Price(0.0000166667, "GB-second", LAMBDA_PAGE),
    "dynamodb write units": Price(0.625, "million write request units (on-demand, Standard class)", DYNAMODB_PAGE),
    "dynamodb read units": Price(0.125, "million read request units (on-demand, Standard class)", DYNAMODB_PAGE),
    "kinesis on-demand ingest": Price(_KINESIS.on_demand_in_gb, "GB, each record rounded up to 1 KB", KINESIS_PAGE),
    "kinesis on-demand fan-out": Price(_KINESIS.on_demand_efo_out_gb, "GB read by the ingest consumer", KINESIS_PAGE),
    "kinesis put payload units": Price(
        _KINESIS.put_units_per_million, "million 25 KB units (provisioned)", KINESIS_PAGE
    ),
    "kinesis fan-out retrieval": Price(
        _KINESIS.efo_retrieval_gb, "GB read by the ingest consumer (provisioned)", KINESIS_PAGE
    ),
    "sqs requests": Price(0.40, "million requests, each 64 KB of payload one request", SQS_PAGE),
    "secrets manager calls": Price(0.05, "10,000 API calls", SECRETS_PAGE),
    "logs ingestion": Price(0.50, "GB of log lines", CLOUDWATCH_PAGE),
    "x-ray traces": Price(5.00, "million traces recorded", XRAY_PAGE),
    # The edge (context key edge): what callers reach, per request and per month.
    "data transfer out": Price(
        0.09, "GB to the internet from a Function URL or API Gateway (first 10 TB)", DATA_TRANSFER_PAGE
    ),
    "cloudfront https requests": Price(1.00, "million HTTPS requests (North America, Europe)", CLOUDFRONT_PAGE),
    "cloudfront transfer out": Price(0.085, "GB to viewers (North America, Europe, first 10 TB)", CLOUDFRONT_PAGE),
    "cloudfront transfer to origin": Price(
        0.02, "GB of requests to the origin (North America, Europe)", CLOUDFRONT_PAGE
    ),
    "waf web acl": Price(5.00, "web ACL per month", WAF_PAGE),
    "waf rule": Price(1.00, "rule or managed rule group per month", WAF_PAGE),
    "waf requests": Price(0.60, "million requests inspected", WAF_PAGE),
    "api gateway rest requests": Price(
        3.50, "million REST API requests (first 333 million a month; a streamed response per 10 MB)", API_GATEWAY_PAGE
    ),
    "secrets manager secret": Price(0.40, "secret per month", SECRETS_PAGE),
}

# -- Assumptions (not measurable against a local moto server) ---------------------------------------
# Round trip of one call from a Lambda function to the service in the same region, warm connection,
# typical (p50) figures: DynamoDB answers single items in single-digit milliseconds, a transaction
# prepares and commits (two rounds), Kinesis PutRecords replicates across three AZs first.
LATENCY_MS: dict[str, float] = {
    "dynamodb.GetItem": 4,
    "dynamodb.BatchGetItem": 5,
    "dynamodb.Query": 5,
    "dynamodb.PutItem": 6,
    "dynamodb.UpdateItem": 6,
    "dynamodb.DeleteItem": 6,
    "dynamodb.TransactWriteItems": 12,
    "dynamodb.TransactGetItems": 8,
    "kinesis.PutRecords": 20,
    "sqs.SendMessage": 10,
    "sqs.SendMessageBatch": 12,
    "secretsmanager.GetSecretValue": 20,
}
DEFAULT_LATENCY_MS = 10.0
# Lambda gives a function one full vCPU at 1,769 MB and a share in proportion below it; one core of
# this machine is taken as one Lambda vCPU (Graviton and this machine's cores differ by tens of %).
FULL_VCPU_MB = 1769
# START, END and REPORT: Lambda's own lines per invocation (REPORT with the X-Ray segment id).
PLATFORM_LOG_BYTES = 350
# Lambda active tracing records 1 request per second and 5% of the rest: at volume, 5% of calls
# (the first second's request, up to 2.6 million a month, is a fixed cost up to $13/month).
TRACED_SHARE = 0.05
# Ingest and audit are priced per batch, as their stream mappings invoke them: a price per million
# calls is a figure for volume, where a shard's batches fill up to the mapping's batch size (the
# ingest mapping's batching window makes them fill at a few hundred events per second per shard
# too). A batch's events come from several callers: one usage counter per principal (and tool and
# day) per batch. At a trickle each event is a batch of its own, and ingest's share of a call is
# its request and checkpoint writes: see docs/performance.md.
INGEST_BATCH_EVENTS = STREAM_BATCH_SIZE
INGEST_BATCH_PRINCIPALS = 10
AUDIT_BATCH_RECORDS = STREAM_BATCH_SIZE
# The share of eventually consistent item reads ([cache]) the DAX item cache answers: measured by
# the bench on an agent's mix of calls in one session (bench_aws_calls._cache_mix_row) and passed
# in; a hit is priced as DAX prices it (no per-request charge: the cluster's node hours are a
# monthly cost), a miss as the table read it becomes.
DEFAULT_DAX_HIT_RATIO = 0.0


@dataclass(frozen=True)
class Invocation:
    """One Lambda invocation of an operation."""

    our_ms: float
    """Measured: the request's time in-process minus the time its AWS calls spent on the wire."""
    calls: Counter[str]
    """The AWS calls it made, by ``service.Operation`` (a DynamoDB read suffixed [cache]/[consistent])."""

    def billed_ms(self, memory_mb: int) -> int:
        """Our time at the memory size's CPU share, plus the assumed round trips; 1 ms steps."""
        cpu = self.our_ms * max(1.0, FULL_VCPU_MB / memory_mb)
        waits = sum(LATENCY_MS.get(_api(name), DEFAULT_LATENCY_MS) * n for name, n in self.calls.items())
        return max(1, math.ceil(cpu + waits))


@dataclass
class Usage:
    """What one operation consumed: its invocations and what its AWS calls cost in units."""

    invocations: list[Invocation] = field(default_factory=list)
    read_units: float = 0.0
    write_units: float = 0.0
    kinesis_records: list[int] = field(default_factory=list)  # bytes of each record (data + partition key)
    sqs_requests: int = 0
    secrets_calls: int = 0
    log_bytes: int = 0  # what the function wrote (EMF and log lines), Lambda's own lines excluded
    transact_actions: Counter[str] = field(default_factory=Counter)
    """The actions of its TransactWriteItems calls, by kind (Put, Update, Delete, ConditionCheck)."""
    cached_read_units: float = 0.0
    """The part of ``read_units`` read eventually consistently by GetItem or BatchGetItem: what
    the DAX item cache may serve (X6)."""
    operations: int = 1
    """How many operations this usage covers (an ingest batch: its events); every figure is divided by it."""
    requests: float | None = None
    """Lambda requests billed, when not one per invocation (an audit pass over part of a batch)."""

    @property
    def calls(self) -> Counter[str]:
        return sum((i.calls for i in self.invocations), Counter())


def read_units(size: int, *, consistent: bool, transactional: bool = False) -> float:
    """One item read: 4 KB steps (at least one), half for an eventually consistent read, twice in a transaction."""
    units = max(1, math.ceil(size / 4096))
    return units * (2.0 if transactional else 1.0 if consistent else 0.5)


def write_units(size: int, *, transactional: bool = False) -> float:
    """One item written: 1 KB steps of the larger of the item before and after (at least one),
    twice in a transaction."""
    return max(1, math.ceil(size / 1024)) * (2.0 if transactional else 1.0)


@dataclass(frozen=True)
class Cost:
    """USD per million operations, by where it is paid."""

    lambda_usd: float
    dynamodb_usd: float
    kinesis_usd: float
    other_usd: float  # SQS, Secrets Manager, log ingestion, X-Ray
    ingest_usd: float  # the ingest function's work on the operation's events
    billed_ms: list[int]
    audit_usd: float = 0.0  # the audit function's work on the table stream's records of the operation and its ingest

    @property
    def total(self) -> float:
        return (
            self.lambda_usd + self.dynamodb_usd + self.kinesis_usd + self.other_usd + self.ingest_usd + self.audit_usd
        )


def _api(name: str) -> str:
    return name.split("[", 1)[0]


def _lambda_usd(
    invocations: list[Invocation], memory_mb: int, architecture: str, requests: float | None = None
) -> float:
    gb_seconds = sum(i.billed_ms(memory_mb) for i in invocations) / 1000 * memory_mb / 1024
    duration = gb_seconds * PRICES[f"lambda duration {architecture}"].usd * 1e6
    billed = len(invocations) if requests is None else requests
    return duration + billed * PRICES["lambda requests"].usd


def _kinesis_usd(records: list[int], stream_mode: str) -> float:
    if stream_mode == "PROVISIONED":
        units = sum(math.ceil(size / PUT_UNIT_BYTES) for size in records)
        read_gb = sum(records) / GB
        return units * PRICES["kinesis put payload units"].usd + read_gb * 1e6 * PRICES["kinesis fan-out retrieval"].usd
    billed_gb = sum(math.ceil(size / ON_DEMAND_BILLING_UNIT) * ON_DEMAND_BILLING_UNIT for size in records) / GB
    return billed_gb * 1e6 * (PRICES["kinesis on-demand ingest"].usd + PRICES["kinesis on-demand fan-out"].usd)


def _other_usd(usage: Usage) -> float:
    logs_gb = (usage.log_bytes + PLATFORM_LOG_BYTES * len(usage.invocations)) / GB
    return (
        usage.sqs_requests * PRICES["sqs requests"].usd
        + usage.secrets_calls * PRICES["secrets manager calls"].usd * 100  # per 10,000 -> per million
        + logs_gb * 1e6 * PRICES["logs ingestion"].usd
        + len(usage.invocations) * TRACED_SHARE * PRICES["x-ray traces"].usd
    )


def _dynamodb_usd(usage: Usage, dax_hit_ratio: float = DEFAULT_DAX_HIT_RATIO) -> float:
    """Table reads and writes; the cached reads' hits are DAX's (no per-request charge)."""
    table_reads = usage.read_units - usage.cached_read_units * dax_hit_ratio
    return table_reads * PRICES["dynamodb read units"].usd + usage.write_units * PRICES["dynamodb write units"].usd


def _processor_usd(usage: Usage, architecture: str) -> float:
    """A stream processor's (ingest, audit) share per operation: its invocations' duration and
    requests, DynamoDB, log lines and traces, divided by the operations the usage covers."""
    if not usage.invocations:
        return 0.0
    requests = len(usage.invocations) if usage.requests is None else usage.requests
    total = (
        _lambda_usd(usage.invocations, INGEST_MEMORY_MB, architecture, requests)
        + _dynamodb_usd(usage)
        + (_kinesis_usd(usage.kinesis_records, DEFAULTS["stream_mode"]) if usage.kinesis_records else 0.0)
        + (usage.log_bytes + PLATFORM_LOG_BYTES * requests) / GB * 1e6 * PRICES["logs ingestion"].usd
        + requests * TRACED_SHARE * PRICES["x-ray traces"].usd
    )
    return total / usage.operations


def cost(
    usage: Usage,
    ingest: Usage | None = None,
    *,
    audit: tuple[Usage, ...] = (),
    dax_hit_ratio: float = DEFAULT_DAX_HIT_RATIO,
    memory_mb: int = ENDPOINT_MEMORY_MB,
    architecture: str = DEFAULTS["architecture"],
    stream_mode: str = DEFAULTS["stream_mode"],
) -> Cost:
    """USD per million operations as deployed by default (memory, architecture, stream mode).

    ``ingest``: its work on a batch of the operation's events (``operations`` events);
    ``audit``: its work on the table stream's records the operation and that batch wrote, each
    usage covering its ``operations``; ``dax_hit_ratio``: the share of the cached reads DAX serves."""
    return Cost(
        lambda_usd=_lambda_usd(usage.invocations, memory_mb, architecture),
        dynamodb_usd=_dynamodb_usd(usage, dax_hit_ratio),
        kinesis_usd=_kinesis_usd(usage.kinesis_records, stream_mode),
        other_usd=_other_usd(usage),
        ingest_usd=_processor_usd(ingest, architecture) if ingest is not None else 0.0,
        billed_ms=[i.billed_ms(memory_mb) for i in usage.invocations],
        audit_usd=sum(_processor_usd(part, architecture) for part in audit),
    )


def median_invocations(runs: list[list[Invocation]]) -> list[Invocation]:
    """The counted run's invocations with each one's time the median over ``runs`` (this
    machine is shared: one run's time drifts by tens of percent)."""
    counted = runs[0]
    return [
        Invocation(our_ms=statistics.median(run[i].our_ms for run in runs if len(run) > i), calls=invocation.calls)
        for i, invocation in enumerate(counted)
    ]


def assumptions(dax_hit_ratio: float = DEFAULT_DAX_HIT_RATIO) -> str:
    """One paragraph: what the figures assume (printed under the table, quoted by the docs)."""
    return (
        f"List prices in {REGION}; endpoint at {ENDPOINT_MEMORY_MB} MB, ingest and audit at {INGEST_MEMORY_MB} MB, "
        f"{DEFAULTS['architecture']}, Kinesis {DEFAULTS['stream_mode']}. Billed duration = our measured time per "
        f"invocation x {FULL_VCPU_MB}/memory (one core here taken as one Lambda vCPU) + an assumed in-region "
        f"round trip per AWS call (DynamoDB {LATENCY_MS['dynamodb.GetItem']:g}-"
        f"{LATENCY_MS['dynamodb.TransactWriteItems']:g} ms, "
        f"Kinesis PutRecords {LATENCY_MS['kinesis.PutRecords']:g} ms), rounded up to 1 ms. DynamoDB units from the "
        "sizes of the items each call read or wrote (a cancelled transaction priced as if it ran); eventually "
        f"consistent item reads the DAX item cache may serve are DAX hits {dax_hit_ratio:.0%} of the time (the "
        "measured hit ratio of an agent's calls; a hit has no per-request charge) and table reads otherwise. Logs: "
        f"the lines measured plus {PLATFORM_LOG_BYTES} bytes of Lambda's own per invocation; X-Ray: "
        f"{TRACED_SHARE:.0%} of invocations traced. Ingest: priced per batch of {INGEST_BATCH_EVENTS} events (the "
        f"operation's own and copies under new ids) from {INGEST_BATCH_PRINCIPALS} principals, each event paying "
        f"a {INGEST_BATCH_EVENTS}th of the batch's invocation, units and logs. Audit: every record the operation "
        "and that batch put on the table's stream (usage counters and markers included: the mapping delivers "
        f"them), processed as part of {AUDIT_BATCH_RECORDS}-record batches. Not included: fixed monthly costs "
        "(the stream's hours, DAX nodes, alarms, metrics)."
    )


# -- The edge ------------------------------------------------------------------------------------------
# Bytes of one request and of its response on the wire, headers included: a tools/call with a short
# result (an assumption; data transfer is a small share of an edge's cost at any size below ~50 KB).
EDGE_REQUEST_BYTES = 1024
EDGE_RESPONSE_BYTES = 2048


@dataclass(frozen=True)
class EdgeCost:
    """What the edge in front of the endpoint costs: USD per million requests, and USD a month idle."""

    edge: str
    per_million: dict[str, float]
    monthly: dict[str, float]

    @property
    def per_million_usd(self) -> float:
        return sum(self.per_million.values())

    @property
    def monthly_usd(self) -> float:
        return sum(self.monthly.values())


def edge_costs() -> list[EdgeCost]:
    """Each value of the context key ``edge``, priced as the stacks build it (stacks/edge_waf.py:
    one web ACL with the rate-based rule and the managed groups; the CloudFront edge's
    origin-verify secret). Data transfer at EDGE_REQUEST_BYTES / EDGE_RESPONSE_BYTES a request."""
    from stacks.edge_waf import MANAGED_GROUPS

    p = {name: price.usd for name, price in PRICES.items()}
    out_gb = EDGE_RESPONSE_BYTES * 1e6 / GB
    in_gb = EDGE_REQUEST_BYTES * 1e6 / GB
    waf_monthly = {"WAF web ACL and rules": p["waf web acl"] + (1 + len(MANAGED_GROUPS)) * p["waf rule"]}
    return [
        EdgeCost("none", {"data transfer": out_gb * p["data transfer out"]}, {}),
        EdgeCost(
            "cloudfront",
            {
                "requests": p["cloudfront https requests"],
                "WAF": p["waf requests"],
                "data transfer": out_gb * p["cloudfront transfer out"] + in_gb * p["cloudfront transfer to origin"],
            },
            {**waf_monthly, "origin-verify secret": p["secrets manager secret"]},
        ),
        EdgeCost(
            "api_gateway",
            {
                "requests": p["api gateway rest requests"],
                "WAF": p["waf requests"],
                "data transfer": out_gb * p["data transfer out"],
            },
            waf_monthly,
        ),
    ]


def edge_table(monthly_requests: tuple[int, ...] = (1_000_000, 100_000_000)) -> list[list[str]]:
    """A header, then one line per edge: its parts per million requests, its total, its fixed
    monthly cost, and a month at each of ``monthly_requests``."""
    header = ["edge", "requests", "WAF", "data transfer", "per million", "per month idle"]
    header += [f"a month at {n / 1e6:g} M requests" for n in monthly_requests]
    lines = [header]
    for edge in edge_costs():
        parts = [edge.per_million.get(name, 0.0) for name in ("requests", "WAF", "data transfer")]
        month = [edge.monthly_usd + edge.per_million_usd * n / 1e6 for n in monthly_requests]
        lines.append([edge.edge, *map(usd, parts), usd(edge.per_million_usd), usd(edge.monthly_usd), *map(usd, month)])
    return lines


def edge_assumptions() -> str:
    return (
        f"Per request: {EDGE_REQUEST_BYTES} bytes in, {EDGE_RESPONSE_BYTES} bytes out (headers included); no free "
        "tier; CloudFront at its North America and Europe prices (PriceClass_100), pay as you go. On top of the "
        "operation's own cost above (the function behind each edge is invoked the same way). A streamed API Gateway "
        "response is billed one request per 10 MB. Not included: a custom domain's Route 53 hosted zone (yours: "
        "$0.50 a month) and DNS queries (alias queries to CloudFront and API Gateway are free), CloudFront standard "
        "logs, the secret's reads (once per environment start and every 5 minutes while it is warm)."
    )


def usd(value: float) -> str:
    """Dollars as the cost tables print them: cents, or a tenth of a cent below 10 cents."""
    return f"{value:.2f}" if value >= 0.1 else f"{value:.3f}"


def price_rows() -> list[tuple[str, str, str]]:
    """(what, USD per unit, source page) for each price used."""
    return [(name, f"${_plain(price.usd)} per {price.per}", price.source) for name, price in PRICES.items()]


def _plain(usd: float) -> str:
    """0.2 -> 0.20, 0.0000133334 -> 0.0000133334 (no exponent: prices are read, not parsed)."""
    whole, _, cents = f"{usd:.10f}".rstrip("0").partition(".")
    return f"{whole}.{cents.ljust(2, '0')}"
