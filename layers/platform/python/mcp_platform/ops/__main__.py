"""Operating a deployment: its dead-letter queues (list, show, replay through the same code path,
purge), its principals' usage (show, reset the quota totals), and proving it works (verify).

    python -m mcp_platform.ops --stack McpPlatform-dev dlq list
    python -m mcp_platform.ops --stack McpPlatform-dev dlq show ingest [--max 10]
    python -m mcp_platform.ops --stack McpPlatform-dev dlq replay ingest [--message-id ID] [--max 100]
    python -m mcp_platform.ops --stack McpPlatform-dev dlq purge producer --yes
    python -m mcp_platform.ops --stack McpPlatform-dev usage show alice [--tenant acme] [--month 2026-12]
    python -m mcp_platform.ops --stack McpPlatform-dev usage show --tenant acme
    python -m mcp_platform.ops --stack McpPlatform-dev usage reset alice [--tenant acme] [--day] --yes
    python -m mcp_platform.ops --stack McpPlatform-dev audit tenant acme [--max 100]
    python -m mcp_platform.ops --stack McpPlatform-dev verify --url <endpoint URL>/mcp --key <API key>

``--stack`` reads the stack's ``OperationsEnvironment`` output (queue URLs, table and stream
names) with your AWS credentials; without it the same names come from the environment (the
variables of mcp_platform.config.EnvVars). Locally, ``python -m local.ops dlq ...`` (or
``usage ...``, ``verify ...``) runs this against a running ``make dev``. Kinds: producer, ingest, audit, expiry,
tasks.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, TypedDict, overload

from mcp_platform.adapters.aws_clients import aws_client
from mcp_platform.config import EnvVars, Settings
from mcp_platform.ops.dead_letters import KINDS, DeadLetterQueues, queue_urls

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_kinesis import KinesisClient
    from mypy_boto3_sqs import SQSClient

OPERATIONS_OUTPUT = "OperationsEnvironment"
API_KEY_VARIABLE = "MCP_API_KEY"  # verify's key when --key is not given (make dev's fixed key too)


class OpsClients(TypedDict, total=False):
    """Clients to use instead of the default ones (tests pass moto-backed ones), by service."""

    cloudformation: CloudFormationClient
    cloudwatch: CloudWatchClient
    dynamodb: DynamoDBClient
    dynamodbstreams: DynamoDBStreamsClient
    kinesis: KinesisClient
    sqs: SQSClient


def stack_environment(stack: str, settings: Settings) -> dict[str, str]:
    """The variables the stack publishes for operators (its OperationsEnvironment output)."""
    outputs = aws_client("cloudformation", settings).describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
    found = next((o["OutputValue"] for o in outputs if o["OutputKey"] == OPERATIONS_OUTPUT), None)
    if found is None:
        raise SystemExit(f"stack {stack} has no {OPERATIONS_OUTPUT} output (deployed before it existed?)")
    environment: dict[str, str] = json.loads(found)
    return environment


def build_queues(env: Mapping[str, str], clients: OpsClients | None = None) -> DeadLetterQueues:
    """The DLQs named by ``env`` with replay wired to the ingest and audit functions' own logic."""
    settings = Settings.from_mapping(dict(env))
    given = clients or {}
    dynamodb = given.get("dynamodb") or aws_client("dynamodb", settings)
    kinesis = given.get("kinesis") or aws_client("kinesis", settings)
    sqs = given.get("sqs") or aws_client("sqs", settings)
    streams = given.get("dynamodbstreams") or aws_client("dynamodbstreams", settings)

    from mcp_platform.bootstrap.audit import build_audit_processor
    from mcp_platform.bootstrap.ingest import build_ingestor

    ingestor = build_ingestor(settings, dynamodb=dynamodb)
    audit = (
        build_audit_processor(settings, dynamodb=dynamodb, kinesis=kinesis, sqs=sqs) if settings.audit_table else None
    )
    return DeadLetterQueues(
        sqs=sqs,
        queue_urls=queue_urls(env),
        kinesis=kinesis,
        streams=streams,
        stream_name=settings.event_stream,
        task_queue_url=settings.task_queue_url,
        ingest_record=ingestor.ingest_record,
        audit_record=audit.process if audit is not None else None,
    )


def run(argv: Sequence[str], env: Mapping[str, str], clients: OpsClients | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcp_platform.ops", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", help="read queue URLs and names from this stack's outputs (AWS)")
    areas = parser.add_subparsers(dest="area", required=True)
    commands = areas.add_parser("dlq", help="dead-letter queues").add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="every DLQ and how many messages wait in it")
    show = commands.add_parser("show", help="decoded messages: which call, session, error")
    show.add_argument("kind", choices=KINDS)
    show.add_argument("--max", type=int, default=10)
    replay = commands.add_parser("replay", help="replay through the same code path, then delete")
    replay.add_argument("kind", choices=KINDS)
    replay.add_argument("--message-id", help="only this message")
    replay.add_argument("--max", type=int, default=100)
    purge = commands.add_parser("purge", help="delete every message of one DLQ")
    purge.add_argument("kind", choices=KINDS)
    purge.add_argument("--yes", action="store_true", help="confirm: the messages are gone for good")
    usage = areas.add_parser("usage", help="a principal's calls and quota totals").add_subparsers(
        dest="command", required=True
    )
    usage_show = usage.add_parser("show", help="calls per day and tool, and the quota totals")
    usage_show.add_argument("principal", nargs="?", help="omitted with --tenant: the whole tenant")
    usage_show.add_argument("--tenant", help="the principal's tenant")
    usage_show.add_argument("--month", help="YYYY-MM (default: this month, UTC)")
    usage_reset = usage.add_parser("reset", help="set the quota totals of this month (or today) to zero")
    usage_reset.add_argument("principal", nargs="?", help="omitted with --tenant: the whole tenant")
    usage_reset.add_argument("--tenant", help="the principal's tenant")
    usage_reset.add_argument("--day", action="store_true", help="today's count only")
    usage_reset.add_argument("--yes", action="store_true", help="confirm: the principal's quotas start again")
    audit = areas.add_parser("audit", help="audit trails").add_subparsers(dest="command", required=True)
    audit_tenant = audit.add_parser("tenant", help="a tenant's sessions and their audit records, oldest first")
    audit_tenant.add_argument("tenant")
    audit_tenant.add_argument("--max", type=int, default=100, help="records per session")
    add_verify_arguments(areas.add_parser("verify", help="prove a deployment works: a report and an exit code"))
    args = parser.parse_args(argv)

    environment = dict(env)
    if args.stack:
        environment.update(stack_environment(args.stack, Settings.from_mapping(environment)))
    if args.area == "usage":
        return run_usage(args, environment, clients)
    if args.area == "audit":
        return run_audit(args, environment, clients)
    if args.area == "verify":
        return run_verify(args, environment, clients)
    queues = build_queues(environment, clients)
    if args.command == "list":
        for kind in KINDS:
            if queues.queue_urls.get(kind):
                print(f"{kind:9} {queues.depth(kind):6d}  {queues.queue_urls[kind]}")
    elif args.command == "show":
        for letter in queues.peek(args.kind, args.max):
            print(json.dumps({"message_id": letter.message_id, **letter.summary}, default=str))
    elif args.command == "replay":
        outcomes = queues.replay(args.kind, message_id=args.message_id, limit=args.max)
        for message_id, outcome in outcomes:
            print(f"{message_id}: {outcome}")
        if any(outcome != "replayed" for _, outcome in outcomes):
            return 1
    elif args.command == "purge":
        if not args.yes:
            print(f"purge deletes every message of the {args.kind} DLQ for good: add --yes", file=sys.stderr)
            return 2
        queues.purge(args.kind)
        print(f"{args.kind}: purged")
    return 0


def run_usage(args: argparse.Namespace, env: Mapping[str, str], clients: OpsClients | None) -> int:
    from mcp_platform.application.auth.tenants import InvalidTenant, owner_of, tenant_usage_subject
    from mcp_platform.ops.usage import UsageCommands
    from mcp_platform.protocol.clock import month_of, utc_day

    settings = Settings.from_mapping(dict(env))
    if args.principal is None and args.tenant is None:
        print("name a principal, a tenant (--tenant), or both", file=sys.stderr)
        return 2
    try:
        subject = tenant_usage_subject(args.tenant) if args.principal is None else owner_of(args.principal, args.tenant)
    except InvalidTenant as exc:
        print(str(exc), file=sys.stderr)
        return 2
    dynamodb = (clients or {}).get("dynamodb") or aws_client("dynamodb", settings)
    commands = UsageCommands(dynamodb, settings.session_table)
    today = utc_day(time.time())
    if args.command == "reset":
        if not args.yes:
            print(f"reset sets {subject}'s quota totals to zero: add --yes", file=sys.stderr)
            return 2
        commands.reset(subject, today=today, day_only=args.day)
        print(f"{subject}: quota totals of {today if args.day else month_of(today)} reset")
        return 0
    month = args.month or month_of(today)
    if not re.fullmatch(r"\d{4}-\d{2}", month):
        print(f"--month must be YYYY-MM, got {month!r}", file=sys.stderr)
        return 2
    report = commands.show(subject, month=month, today=today)
    for row in report.days:
        print(json.dumps({"day": row.day, "tool": row.tool, "calls": row.calls, "errors": row.errors}))
    totals = {"principal": report.principal, "month": month, "month_calls": report.totals.month}
    if month == month_of(today):
        totals["today_calls"] = report.totals.day
    if settings.quotas:
        totals["quotas"] = json.loads(settings.quotas)
    print(json.dumps({"quota_totals": totals}))
    return 0


def run_audit(args: argparse.Namespace, env: Mapping[str, str], clients: OpsClients | None) -> int:
    """One JSON line per audit record of the tenant's sessions, each session's oldest first."""
    from mcp_platform.adapters.dynamodb.audit_trail import AuditTrail
    from mcp_platform.application.auth.tenants import is_tenant

    settings = Settings.from_mapping(dict(env))
    if not is_tenant(args.tenant):
        print(f"not a tenant name: {args.tenant!r}", file=sys.stderr)
        return 2
    if not settings.audit_table:
        print(f"{EnvVars.AUDIT_TABLE} is not set (audit is off?)", file=sys.stderr)
        return 2
    dynamodb = (clients or {}).get("dynamodb") or aws_client("dynamodb", settings)
    trail = AuditTrail(dynamodb, settings.audit_table)
    for session_id in trail.tenant_sessions(args.tenant):
        for record in trail.session_trail(session_id, limit=args.max).records:
            print(json.dumps({"session_id": session_id, **record}, default=str))
    return 0


def add_verify_arguments(verify: argparse.ArgumentParser) -> None:
    from mcp_platform.ops.verify import DEFAULT_INGEST_WITHIN_S, DEFAULT_TIMEOUT_S, Tools

    verify.add_argument("--url", required=True, help="the MCP endpoint, e.g. the McpEndpointUrl output (…/mcp)")
    verify.add_argument("--key", help=f"an API key (default: ${API_KEY_VARIABLE})")
    verify.add_argument(
        "--ingest-within",
        type=float,
        default=DEFAULT_INGEST_WITHIN_S,
        help="seconds the calls' events may take to reach ingest",
    )
    verify.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per HTTP request")
    defaults = Tools()
    verify.add_argument("--opener-tool", default=defaults.opener, help="the tool that opens a session")
    verify.add_argument("--session-tool", default=defaults.session, help="a session tool taking 'text'")
    verify.add_argument("--streaming-tool", default=defaults.streaming, help="a tool that reports progress")
    verify.add_argument("--report", help="also write the report as JSON to this file")


def run_verify(args: argparse.Namespace, env: Mapping[str, str], clients: OpsClients | None) -> int:
    """One line per check, the exit code 1 if any failed (mcp_platform.ops.verify)."""
    from mcp_platform.ops.verify import Tools, Verifier, VerifyOptions

    key = args.key or os.environ.get(API_KEY_VARIABLE, "")
    if not key:
        print(f"an API key is needed: --key, or ${API_KEY_VARIABLE}", file=sys.stderr)
        return 2
    settings = Settings.from_mapping(dict(env))
    made: dict[str, object] = dict(clients or {})

    # A ClientFactory (mcp_platform.ops.verify): the service's client, built on first use.
    @overload
    def client(service: Literal["cloudformation"]) -> CloudFormationClient: ...
    @overload
    def client(service: Literal["cloudwatch"]) -> CloudWatchClient: ...
    @overload
    def client(service: Literal["dynamodb"]) -> DynamoDBClient: ...
    @overload
    def client(service: Literal["sqs"]) -> SQSClient: ...
    def client(service: str) -> object:
        if service not in made:
            made[service] = aws_client(service, settings)
        return made[service]

    options = VerifyOptions(
        url=args.url,
        key=key,
        tools=Tools(opener=args.opener_tool, session=args.session_tool, streaming=args.streaming_tool),
        ingest_within_s=args.ingest_within,
        timeout_s=args.timeout,
        stack=args.stack,
    )
    print(f"verifying {args.url}", flush=True)
    report = Verifier(options, env, client).run()
    for check in report.checks:
        print(check.line(), flush=True)
    print("verified: every check passed" if report.passed else "NOT verified: a check failed", flush=True)
    if args.report:
        with open(args.report, "w", encoding="utf-8") as out:
            json.dump(report.as_json(), out, indent=2)
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:], os.environ))
