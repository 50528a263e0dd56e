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
import re
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import aws_lambda as lambda_

from stacks.common import function_telemetry
from stacks.config import DEFAULTS, PlatformConfig
from stacks.endpoint import MEMORY_MB as ENDPOINT_MEMORY_MB
from stacks.processing import BATCH_SIZE as STREAM_BATCH_SIZE
from stacks.processing import MEMORY_MB as INGEST_MEMORY_MB
from stacks.shard_planner import GB, ON_DEMAND_BILLING_UNIT, PUT_UNIT_BYTES, Pricing
from stacks.shard_planner import HOURS_PER_MONTH as _HOURS_PER_MONTH

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
DAX_PAGE = "https://aws.amazon.com/dynamodb/pricing/on-demand/"  # "DynamoDB Accelerator (DAX)"
PRIVATELINK_PAGE = "https://aws.amazon.com/privatelink/pricing/"
KMS_PAGE = "https://aws.amazon.com/kms/pricing/"
ROUTE53_PAGE = "https://aws.amazon.com/route53/pricing/"
DYNAMODB_PROVISIONED_PAGE = "https://aws.amazon.com/dynamodb/pricing/provisioned/"


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
    # Idle: what a deployment pays a month before its first call (idle_costs: from the template).
    "kinesis on-demand stream": Price(_KINESIS.on_demand_stream_hour, "stream-hour (on-demand)", KINESIS_PAGE),
    "kinesis shard": Price(_KINESIS.shard_hour, "shard-hour (provisioned)", KINESIS_PAGE),
    "kinesis extended retention": Price(
        _KINESIS.extended_retention_shard_hour, "shard-hour of retention beyond 24 h (provisioned)", KINESIS_PAGE
    ),
    "kinesis fan-out consumer": Price(
        _KINESIS.efo_consumer_shard_hour, "consumer-shard-hour (provisioned; on-demand: per GB only)", KINESIS_PAGE
    ),
    "dax dax.t3.small": Price(0.04, "node-hour", DAX_PAGE),
    "dax dax.t3.medium": Price(0.08, "node-hour", DAX_PAGE),
    "interface endpoint": Price(0.01, "VPC interface endpoint per AZ-hour", PRIVATELINK_PAGE),
    "kms key": Price(1.00, "customer managed key per month", KMS_PAGE),
    "cloudwatch alarm": Price(0.10, "standard-resolution alarm metric per month", CLOUDWATCH_PAGE),
    "cloudwatch high-resolution alarm": Price(0.30, "high-resolution (10 s) alarm metric per month", CLOUDWATCH_PAGE),
    "cloudwatch composite alarm": Price(0.50, "composite alarm per month", CLOUDWATCH_PAGE),
    "cloudwatch dashboard": Price(3.00, "dashboard per month (an account's first 3 are free)", CLOUDWATCH_PAGE),
    "cloudwatch metric": Price(
        0.30, "custom metric per month (first 10,000; Kinesis shard-level metrics are billed as these)", CLOUDWATCH_PAGE
    ),
    "lambda provisioned concurrency arm64": Price(0.0000033334, "GB-second kept initialized", LAMBDA_PAGE),
    "lambda provisioned concurrency x86_64": Price(0.0000041667, "GB-second kept initialized", LAMBDA_PAGE),
    "dynamodb provisioned read capacity": Price(0.00013, "RCU-hour (provisioned capacity)", DYNAMODB_PROVISIONED_PAGE),
    "dynamodb provisioned write capacity": Price(0.00065, "WCU-hour (provisioned capacity)", DYNAMODB_PROVISIONED_PAGE),
    "route 53 hosted zone": Price(0.50, "hosted zone per month", ROUTE53_PAGE),
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
# A price per million calls is a production figure: every function is priced with the logging and
# tracing a stage outside the dev stages deploys, read from the function the stacks build every
# function's properties with (stacks.common.function_telemetry), so the two cannot drift.
PRICED_STAGE = "prod"
PRICED = PlatformConfig.from_context({"stage": PRICED_STAGE}.get)
DEPLOYED = function_telemetry(PRICED)
# START, END and REPORT (platform.start, platform.report): Lambda's own lines per invocation, at
# system log level INFO or DEBUG (an assumption: 350 bytes as text; not measurable here); none at WARN.
LAMBDA_LINES_BYTES = 350
PLATFORM_LOG_BYTES = 0 if DEPLOYED["system_log_level_v2"] == lambda_.SystemLogLevel.WARN else LAMBDA_LINES_BYTES
# Lambda active tracing records 1 request per second and 5% of the rest: at volume, 5% of calls
# (the first second's request, up to 2.6 million a month, is a fixed cost up to $13/month). Pass
# through records only what a caller sampled: nothing the platform decides.
ACTIVE_TRACED_SHARE = 0.05
TRACED_SHARE = ACTIVE_TRACED_SHARE if DEPLOYED["tracing"] == lambda_.Tracing.ACTIVE else 0.0
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
        f"the lines measured plus {PLATFORM_LOG_BYTES} bytes of Lambda's own per invocation (a {PRICED_STAGE} "
        f"stage: system_log_level {PRICED.system_log_level}; {LAMBDA_LINES_BYTES} bytes at INFO); X-Ray: "
        f"{TRACED_SHARE:.0%} of invocations traced (tracing {PRICED.tracing}; "
        f"{ACTIVE_TRACED_SHARE:.0%} when active). Ingest: priced per batch of {INGEST_BATCH_EVENTS} events (the "
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


# -- Idle: what a deployment costs a month before its first call -----------------------------------------
# Walked from the synthesized templates (bench/idle_cost.py synthesizes each configuration), never
# from a list kept by hand: every resource type is either priced below or named in FREE_AT_IDLE.
HOURS_PER_MONTH = _HOURS_PER_MONTH
# A new on-demand stream is created with 4 MB/s of write capacity: 4 shards, each publishing the
# shard-level metrics (K8) it is asked for.
ON_DEMAND_IDLE_SHARDS = 4
# Lambda polls a standard SQS queue with 5 long-polling connections while it is empty, each a
# ReceiveMessage every 20 s (the task worker's queue, tasks=true).
SQS_IDLE_POLLERS = 5
SQS_LONG_POLL_S = 20
IDLE_COLUMNS = (
    "Kinesis stream",
    "fan-out consumer",
    "shard metrics",
    "DAX",
    "VPC endpoints",
    "KMS key",
    "alarms",
    "dashboard",
    "secrets",
    "WAF",
    "queue polling",
    "other",
)
# Types that cost nothing a month when nothing calls them: priced per request, per GB stored or
# moved (an empty table's point-in-time recovery is 0 GB), or free (IAM, SNS topics, CodeDeploy for
# Lambda, the VPC itself with no NAT gateway, gateway endpoints, log groups until they hold logs).
FREE_AT_IDLE = frozenset(
    {
        "AWS::ApiGateway::Account",
        "AWS::ApiGateway::BasePathMapping",
        "AWS::ApiGateway::Deployment",
        "AWS::ApiGateway::DomainName",
        "AWS::ApiGateway::Method",
        "AWS::ApiGateway::Resource",
        "AWS::ApiGateway::RestApi",
        "AWS::ApiGateway::Stage",
        "AWS::CertificateManager::Certificate",
        "AWS::CloudFront::Distribution",
        "AWS::CloudFront::Function",
        "AWS::CloudFront::OriginRequestPolicy",
        "AWS::CloudFront::CachePolicy",
        "AWS::CloudFront::ResponseHeadersPolicy",
        "AWS::CodeDeploy::Application",
        "AWS::CodeDeploy::DeploymentGroup",
        "AWS::Cognito::UserPool",
        "AWS::Cognito::UserPoolClient",
        "AWS::Cognito::UserPoolDomain",
        "AWS::Cognito::UserPoolResourceServer",
        "AWS::DAX::ParameterGroup",
        "AWS::DAX::SubnetGroup",
        "AWS::EC2::FlowLog",
        "AWS::EC2::RouteTable",
        "AWS::EC2::SecurityGroup",
        "AWS::EC2::SecurityGroupEgress",
        "AWS::EC2::SecurityGroupIngress",
        "AWS::EC2::Subnet",
        "AWS::EC2::SubnetRouteTableAssociation",
        "AWS::EC2::VPC",
        "AWS::IAM::Policy",
        "AWS::IAM::Role",
        "AWS::KMS::Alias",
        "AWS::Lambda::EventInvokeConfig",
        "AWS::Lambda::Function",
        "AWS::Lambda::LayerVersion",
        "AWS::Lambda::Permission",
        "AWS::Lambda::Url",
        "AWS::Lambda::Version",
        "AWS::Logs::LogGroup",
        "AWS::Route53::RecordSet",
        "AWS::SNS::Subscription",
        "AWS::SNS::Topic",
        "AWS::SNS::TopicPolicy",
        "AWS::SQS::Queue",
        "AWS::SQS::QueuePolicy",
        "AWS::SSM::Parameter",
        "AWS::WAFv2::WebACLAssociation",
        "AWS::CDK::Metadata",
    }
)


@dataclass(frozen=True)
class IdleCost:
    """What one configuration costs a month idle, by IDLE_COLUMNS; ``unpriced``: resource types
    of its templates that are neither priced nor known to be free (a new type: price it here)."""

    configuration: str
    items: dict[str, float]
    unpriced: tuple[str, ...] = ()

    @property
    def total(self) -> float:
        return sum(self.items.values())


def idle_costs(configuration: str, templates: Iterable[dict[str, Any]]) -> IdleCost:
    """Each resource of ``templates`` (a configuration's stacks) that has a price per hour or per
    month, priced at the list prices above for HOURS_PER_MONTH; what is billed per request or per
    GB is zero before the first call."""
    items = dict.fromkeys(IDLE_COLUMNS, 0.0)
    unpriced: set[str] = set()
    p = {name: price.usd for name, price in PRICES.items()}
    month = float(HOURS_PER_MONTH)
    for template in templates:
        resources: dict[str, dict[str, Any]] = template.get("Resources", {})
        streams = {
            k: _stream_idle(v.get("Properties", {}))
            for k, v in resources.items()
            if v["Type"] == "AWS::Kinesis::Stream"
        }
        queues = {k for k, v in resources.items() if v["Type"] == "AWS::SQS::Queue"}
        for logical_id, resource in resources.items():
            kind, props = resource["Type"], resource.get("Properties", {})
            if kind == "AWS::Kinesis::Stream":
                mode, shards, retention = streams[logical_id]
                if mode == "ON_DEMAND":
                    items["Kinesis stream"] += month * p["kinesis on-demand stream"]  # retention: per GB
                else:
                    items["Kinesis stream"] += shards * month * p["kinesis shard"]
                    if retention > 24:
                        items["Kinesis stream"] += shards * month * p["kinesis extended retention"]
            elif kind == "AWS::Kinesis::StreamConsumer":
                mode, shards, _ = streams[str(_ref_id(props["StreamARN"]))]
                if mode == "PROVISIONED":  # on-demand bills fan-out per GB read only
                    items["fan-out consumer"] += shards * month * p["kinesis fan-out consumer"]
            elif kind.startswith("Custom::") and "enableEnhancedMonitoring" in _joined(props.get("Create")):
                created = _joined(props["Create"])
                metrics = re.search(r'"ShardLevelMetrics":\[([^\]]*)\]', created)
                count = len(re.findall(r'"[A-Za-z]+"', metrics.group(1))) if metrics else 0
                stream_ids = [i for i in streams if i in _refs(props["Create"])]
                shards = streams[stream_ids[0]][1] if stream_ids else 1
                items["shard metrics"] += count * shards * p["cloudwatch metric"]
            elif kind.startswith("Custom::"):
                # A call at deploy time (a describe, a default security group's rules): no standing
                # charge of its own. One that turns on something billed is priced above, as K8's is.
                continue
            elif kind == "AWS::DAX::Cluster":
                node = f"dax {props['NodeType']}"
                if node not in p:
                    unpriced.add(f"{kind} ({props['NodeType']})")
                    continue
                items["DAX"] += int(props["ReplicationFactor"]) * month * p[node]
            elif kind == "AWS::EC2::VPCEndpoint":
                if props.get("VpcEndpointType") == "Interface":  # a gateway endpoint is free
                    azs = len(props["SubnetIds"]) if isinstance(props.get("SubnetIds"), list) else 2
                    items["VPC endpoints"] += azs * month * p["interface endpoint"]
            elif kind == "AWS::KMS::Key":
                items["KMS key"] += p["kms key"]
            elif kind == "AWS::CloudWatch::Alarm":
                items["alarms"] += _alarm_monthly(props, p)
            elif kind == "AWS::CloudWatch::CompositeAlarm":
                items["alarms"] += p["cloudwatch composite alarm"]
            elif kind == "AWS::CloudWatch::Dashboard":
                items["dashboard"] += p["cloudwatch dashboard"]
            elif kind == "AWS::SecretsManager::Secret":
                items["secrets"] += p["secrets manager secret"]
            elif kind == "AWS::WAFv2::WebACL":
                items["WAF"] += p["waf web acl"] + len(props.get("Rules", [])) * p["waf rule"]
            elif kind == "AWS::Lambda::EventSourceMapping":
                if _ref_id(props.get("EventSourceArn")) in queues:  # Kinesis and table streams: no charge
                    polls = SQS_IDLE_POLLERS * month * 3600 / SQS_LONG_POLL_S
                    items["queue polling"] += polls / 1e6 * p["sqs requests"]
            elif kind == "AWS::Lambda::Alias":
                items["other"] += _provisioned_concurrency(props, resources, p)
            elif kind == "AWS::DynamoDB::Table":
                items["other"] += _provisioned_capacity(props, p)  # on-demand tables: per request and GB
            elif kind == "AWS::Route53::HostedZone":
                items["other"] += p["route 53 hosted zone"]
            elif kind not in FREE_AT_IDLE:
                unpriced.add(kind)
    return IdleCost(configuration, items, tuple(sorted(unpriced)))


def _stream_idle(props: dict[str, Any]) -> tuple[str, int, int]:
    """(mode, shards at idle, retention hours) of a stream's properties."""
    mode = props.get("StreamModeDetails", {}).get("StreamMode", "PROVISIONED")
    shards = ON_DEMAND_IDLE_SHARDS if mode == "ON_DEMAND" else int(props.get("ShardCount", 1))
    return mode, shards, int(props.get("RetentionPeriodHours", 24))


def _alarm_monthly(props: dict[str, Any], p: dict[str, float]) -> float:
    """One alarm: each metric it evaluates (a metric-math alarm: each of its metrics), standard or
    high resolution by its period."""
    queries = props.get("Metrics")
    periods = [q["MetricStat"].get("Period", 60) for q in queries if "MetricStat" in q] if queries else []
    if not queries:
        periods = [props.get("Period", 60)]
    return sum(p["cloudwatch high-resolution alarm" if int(period) < 60 else "cloudwatch alarm"] for period in periods)


def _provisioned_concurrency(props: dict[str, Any], resources: dict[str, dict[str, Any]], p: dict[str, float]) -> float:
    environments = int(props.get("ProvisionedConcurrencyConfig", {}).get("ProvisionedConcurrentExecutions", 0))
    if not environments:
        return 0.0
    function = resources.get(_ref_id(props.get("FunctionName")) or "", {}).get("Properties", {})
    architecture = (function.get("Architectures") or ["x86_64"])[0]
    gb = int(function.get("MemorySize", 128)) / 1024
    return environments * gb * HOURS_PER_MONTH * 3600 * p[f"lambda provisioned concurrency {architecture}"]


def _provisioned_capacity(props: dict[str, Any], p: dict[str, float]) -> float:
    if props.get("BillingMode", "PROVISIONED") == "PAY_PER_REQUEST":
        return 0.0
    throughputs = [props.get("ProvisionedThroughput", {})]
    throughputs += [index.get("ProvisionedThroughput", {}) for index in props.get("GlobalSecondaryIndexes", [])]
    hourly = sum(
        int(t.get("ReadCapacityUnits", 0)) * p["dynamodb provisioned read capacity"]
        + int(t.get("WriteCapacityUnits", 0)) * p["dynamodb provisioned write capacity"]
        for t in throughputs
    )
    return hourly * HOURS_PER_MONTH


def _ref_id(value: Any) -> str | None:
    """The logical id a ``Ref`` or ``Fn::GetAtt`` names, else None."""
    if isinstance(value, dict):
        if "Ref" in value:
            return str(value["Ref"])
        if "Fn::GetAtt" in value:
            return str(value["Fn::GetAtt"][0])
    return None


def _refs(value: Any) -> set[str]:
    """Every logical id referred to anywhere in ``value``."""
    found = {_ref_id(value)} - {None} if isinstance(value, dict) else set()
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return {str(i) for i in found} | {ref for child in children for ref in _refs(child)}


def _joined(value: Any) -> str:
    """The literal text of a string or an ``Fn::Join`` (references left out)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join(part for part in value["Fn::Join"][1] if isinstance(part, str))
    return ""


def idle_table(costs: list[IdleCost]) -> list[list[str]]:
    """A header, then one line per configuration: USD a month by item (the items no configuration
    pays left out), and the total."""
    columns = [c for c in IDLE_COLUMNS if any(cost.items[c] for cost in costs)]
    lines = [["configuration", *columns, "total a month"]]
    lines += [[c.configuration, *(usd(c.items[col]) for col in columns), usd(c.total)] for c in costs]
    return lines


def idle_assumptions() -> str:
    return (
        f"USD a month ({HOURS_PER_MONTH} hours) at {REGION} list prices, before the first call: what the synthesized "
        "templates hold that is billed by the hour or the month. Kinesis: an on-demand stream's hour (its data and "
        "retention are per GB), a provisioned stream's shard-hours and, past 24 h of retention, its "
        "extended-retention shard-hours; an enhanced fan-out consumer's consumer-shard-hours (provisioned only); "
        "shard-level metrics "
        f"(K8) as CloudWatch custom metrics, {ON_DEMAND_IDLE_SHARDS} shards for a new on-demand stream (an upper "
        "bound: a metric is billed for the hours it is published). DAX: node-hours; interface endpoints: one per "
        "AZ-hour "
        "(the DynamoDB gateway endpoint is free); alarms per metric evaluated; the dashboard at $3 (free while "
        f"the account has no more than 3); the task queue's long polling by Lambda ({SQS_IDLE_POLLERS} pollers, one "
        f"ReceiveMessage each per {SQS_LONG_POLL_S} s). Zero at idle, so not in the table: DynamoDB (on-demand tables "
        "and their point-in-time recovery are priced per request and per GB; empty tables hold none), Lambda, "
        "logs, X-Ray, VPC flow logs, CloudFront and API Gateway (per request). No free tier counted but the "
        "dashboards'."
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
