"""What each CDK context key means: the configuration reference (docs/operating/configuration.md)
is rendered from this table and :data:`stacks.config.DEFAULTS`, and a test keeps the two in step,
so the documentation cannot drift from the keys synth reads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from stacks.config import DEFAULTS


@dataclass(frozen=True)
class ContextKeyDoc:
    meaning: str
    default: str | None = None  # shown instead of DEFAULTS' value (a derived or absent default)


KEYS: dict[str, ContextKeyDoc] = {
    "stage": ContextKeyDoc(
        "stage name (lowercase); `dev`, `test`, `sandbox` are dev stages",
    ),
    "profile": ContextKeyDoc(
        (
            "`minimal`: the cheapest sound deployment, the defaults of `dax=false`, `stream_mode=PROVISIONED`, "
            "`shard_count=1`, `retention_hours=24` and `ingest_fan_out=false` (any of them set explicitly still "
            'wins); see Deploying, "What it costs to leave running", for its monthly cost and when to move off it'
        ),
        default="none",
    ),
    "dax": ContextKeyDoc(
        "DAX cluster in front of the session table; `false` → no DAX, no VPC, endpoint talks to DynamoDB directly",
    ),
    "stream_mode": ContextKeyDoc(
        "Kinesis capacity mode, `ON_DEMAND` or `PROVISIONED`",
    ),
    "shard_count": ContextKeyDoc(
        "PROVISIONED only; default = K6 sizing from the next two keys",
        default="derived",
    ),
    "peak_records_per_s": ContextKeyDoc(
        "K6 sizing input: peak tool-call events per second",
    ),
    "avg_record_bytes": ContextKeyDoc(
        "K6 sizing input: average event size",
    ),
    "retention_hours": ContextKeyDoc(
        "Kinesis retention, 24-8760 (K7); the ingest dedupe window follows it (+24 h)",
    ),
    "ingest_fan_out": ContextKeyDoc(
        (
            "the ingest mapping reads through an enhanced fan-out consumer (K5: its own 2 MB/s per shard, pushed "
            "in about 70 ms); `false` → no consumer, the mapping polls each shard once a second with shared "
            "throughput (up to a second later; no consumer-shard hours on a PROVISIONED stream)"
        ),
    ),
    "log_retention_days": ContextKeyDoc(
        "CloudWatch Logs retention of every function",
    ),
    "system_log_level": ContextKeyDoc(
        (
            "Lambda's own log lines of every function (JSON log format): `INFO` writes START/END/REPORT "
            "(`platform.start`, `platform.report`: duration, init duration, peak memory) for every invocation, "
            "about 350 bytes of logs each; `WARN` only what went wrong; `DEBUG` more. Duration, errors and "
            "throttles stay Lambda metrics either way (see Observability)"
        ),
        default="derived: `INFO` in dev stages, `WARN` elsewhere",
    ),
    "tracing": ContextKeyDoc(
        (
            "X-Ray tracing of every function (and of the API Gateway stage with `edge=api_gateway`): "
            "`pass_through` records a trace only for a request whose caller sampled it (an `X-Amzn-Trace-Id` "
            "header with `Sampled=1`); `active` samples invocations by X-Ray's default rule (1 a second, then "
            "5%: about $0.25 per million calls) and records Lambda's own segments, which do not carry the "
            "platform's trace ids: for traces of the MCP requests, use `otlp_endpoint` (see Traces)"
        ),
    ),
    "auth_mode": ContextKeyDoc(
        (
            "`api_key` (bearer keys stored hashed), `oauth` (OAuth 2.1 resource server, needs `dax=false`), "
            "or `api_key,oauth` (both, for migrating); see the OAuth section of Security"
        ),
    ),
    "oauth_issuer": ContextKeyDoc(
        "the authorization server's issuer URL (https); required with `oauth` unless `oauth_cognito`",
    ),
    "oauth_audience": ContextKeyDoc(
        (
            "the resource identifier tokens must name in `aud`; default: the Function URL "
            "(`https://<id>.lambda-url.<region>.on.aws/mcp`), derived per request; `https://<domain_name>/mcp` "
            "behind an edge with a custom domain. Set it to the distribution's URL behind CloudFront without one"
        ),
    ),
    "oauth_scopes": ContextKeyDoc(
        "space-separated scopes every request needs (`mcp/tools` with `oauth_cognito`)",
    ),
    "oauth_jwks_url": ContextKeyDoc(
        "the issuer's JWKS; default: `jwks_uri` of its RFC 8414 / OpenID metadata",
    ),
    "oauth_client_ids": ContextKeyDoc(
        "client ids whose tokens may lack `aud` (providers that bind access tokens by `client_id`, like Cognito)",
    ),
    "oauth_cognito": ContextKeyDoc(
        "provision an Amazon Cognito user pool as the authorization server and wire the endpoint to it",
    ),
    "oauth_cognito_callback_urls": ContextKeyDoc(
        "redirect URIs of the Cognito app client (https, or `http://localhost...`)",
        default="MCP Inspector's",
    ),
    "oauth_facade": ContextKeyDoc(
        "the authorization-server facade on the endpoint's origin (RFC 8414 metadata, RFC 7591 "
        "registration, client ID metadata documents, code + PKCE, its own tokens bound to this resource) "
        "in front of the upstream provider",
        default="`true` with `oauth_cognito`, else `false`",
    ),
    "oauth_upstream_client_secret": ContextKeyDoc(
        "with the facade in front of a provider other than Cognito: the secret (name or ARN) holding its "
        '`{"client_id", "client_secret"}`',
    ),
    "oauth_tenant_claim": ContextKeyDoc(
        (
            "the token claim naming the caller's tenant (e.g. `tenant_id`); set, a token without a valid tenant "
            "is refused. With the OAuth facade the claim is read from the upstream sign-in's ID token (a machine "
            "client's access token) and the facade's tokens carry it; a sign-in without it is refused. With "
            "`oauth_cognito`, `custom:<name>` gives the user pool that immutable custom attribute (set when "
            "the user is created)"
        ),
        default="none",
    ),
    "oauth_upstream_scopes": ContextKeyDoc(
        "the scopes the facade asks the upstream provider for when it signs a user in (must include `openid`)",
    ),
    "oauth_machine_client": ContextKeyDoc(
        "a Cognito app client for machine callers (`client_credentials` grant); the client-credentials "
        "extension is then advertised in `server/discover`",
    ),
    "allowed_origins": ContextKeyDoc(
        "CORS / Origin allow-list (S8); `*` is refused",
    ),
    "edge": ContextKeyDoc(
        (
            "what callers reach: `none` (the Function URL), `cloudfront` (a distribution with a WAF web ACL in "
            "front of the Function URL, which refuses calls that bypass it) or `api_gateway` (a regional REST "
            "API streaming the Lambda response, regional WAF, stage throttling, no Function URL); see Choosing "
            "an edge"
        ),
    ),
    "domain_name": ContextKeyDoc(
        (
            "the edge's custom domain (e.g. `mcp.example.com`); the OAuth resource, the facade's issuer and "
            "the Origin allow-list use it. Needs `edge` and `certificate_arn` or `hosted_zone_id`"
        ),
        default="none",
    ),
    "certificate_arn": ContextKeyDoc(
        "an ACM certificate for `domain_name` (in us-east-1 with `cloudfront`, the stack's region with `api_gateway`)",
        default="none",
    ),
    "hosted_zone_id": ContextKeyDoc(
        (
            "a Route 53 hosted zone holding `domain_name`: the alias record is created in it, and without "
            "`certificate_arn` a DNS-validated certificate too"
        ),
        default="none",
    ),
    "region": ContextKeyDoc(
        (
            "the platform stack's region; required with `edge=cloudfront` (its web ACL and certificate live in a "
            "stack of their own in us-east-1, referenced across regions)"
        ),
        default="none (environment-agnostic)",
    ),
    "waf_rate_limit": ContextKeyDoc(
        "the WAF rate-based rule of either edge: requests per caller IP per 5 minutes before that IP is blocked",
    ),
    "api_throttle_rate": ContextKeyDoc(
        "`api_gateway`: the stage's steady request rate per second (beyond it API Gateway answers 429)",
    ),
    "api_throttle_burst": ContextKeyDoc(
        "`api_gateway`: the stage's burst of requests",
    ),
    "origin_verify_key": ContextKeyDoc(
        (
            "`cloudfront`: the key id, in the origin-verify secret, whose value the distribution sends; rotate "
            "by adding a key to the secret and deploying with its id (see Choosing an edge)"
        ),
    ),
    "architecture": ContextKeyDoc(
        "Lambda architecture, `arm64` or `x86_64`",
    ),
    "lambda_python": ContextKeyDoc(
        "the Python runtime of every function and of the layer's wheels; the tests run on the same version ",
        default="`.python-version` (`3.13`)",
    ),
    "removal_policy": ContextKeyDoc(
        "`destroy` in dev stages, `retain` elsewhere (tables also get deletion protection outside dev)",
        default="derived",
    ),
    "dax_node_type": ContextKeyDoc(
        "DAX node type",
    ),
    "dax_nodes": ContextKeyDoc(
        "DAX nodes (use ≥ 3 in production for availability)",
    ),
    "dax_item_ttl_seconds": ContextKeyDoc(
        "DAX item cache TTL (X2)",
    ),
    "dax_query_ttl_seconds": ContextKeyDoc(
        "DAX query cache TTL (X2)",
    ),
    "session_ttl_seconds": ContextKeyDoc(
        "sliding session lifetime (D7)",
    ),
    "compatible_with": ContextKeyDoc(
        (
            "the earliest release that may still serve beside this one, during a canary or after a rollback, "
            "whose stored formats are then written: `0.1` (a session's context in its metadata list, audit items "
            "with every attribute), `0.2` or `0.3` (a committed call's event whole on its record) for the first "
            'of the two deployments of an upgrade from that release; Upgrades, "Two versions at once"'
        ),
        default="none",
    ),
    "audit_retention_days": ContextKeyDoc(
        "how long audit records are kept (audit table TTL)",
    ),
    "tasks": ContextKeyDoc(
        (
            "the task worker, its queue and DLQ (tasks extension); "
            "`false` leaves them out and task-required tools are refused (`-32021`)"
        ),
    ),
    "task_max_attempts": ContextKeyDoc(
        (
            "worker attempts of one task (crashes, timeouts, throttling) before it is recorded `failed`; the "
            "queue dead-letters a message after two more receives"
        ),
    ),
    "task_worker_concurrency": ContextKeyDoc(
        "reserved concurrency of the task worker: caps how many tasks run at once (the others wait in the queue)",
        default="unreserved",
    ),
    "endpoint_reserved_concurrency": ContextKeyDoc(
        (
            "reserved concurrency of the public endpoint: a request flood can use at most this many "
            "environments, never the ingest, audit and worker functions' share; requests beyond it get HTTP "
            "429 (`TooManyRequestsException`) from the Function URL, which MCP clients retry"
        ),
        default="unreserved",
    ),
    "endpoint_provisioned_concurrency": ContextKeyDoc(
        (
            "environments of the endpoint kept initialized on its `live` alias: no cold start for that many "
            "concurrent requests, billed around the clock whether used or not (see Deploying for what it costs); "
            "at most `endpoint_reserved_concurrency` when that is set"
        ),
        default="none",
    ),
    "deployment": ContextKeyDoc(
        (
            "how a deployment moves every function's `live` alias to its new version, with CodeDeploy: "
            "`all_at_once`, `canary<P>_<M>min` (P percent of the traffic, the rest after M minutes, e.g. "
            "`canary10_5min`) or `linear<P>_every<M>min` (P percent more every M minutes, e.g. "
            "`linear10_every1min`); rolled back when the endpoint's error-rate or p99 alarm, a DLQ's alarm or "
            "the function's errors alarm fires (see Deploying)"
        ),
        default="`all_at_once` in dev stages, `canary10_5min` elsewhere",
    ),
    "rate_limits": ContextKeyDoc(
        (
            'admission limits shared by every instance, rule → `"<N>/<period>"` (period `second`, `minute`, `hour` '
            "or `day`); rules: `principal`, `tenant` (all of a tenant's callers together), `client` (OAuth "
            "client), `tool:<name>`, `register` and `token` (the OAuth facade's); e.g. "
            '`{"principal": "60/minute", "tool:search": "10/minute"}` (a JSON object, or its text with `-c`). '
            "Set, it adds a DynamoDB table of counters (TTL, on-demand) that the endpoint updates at admission"
        ),
        default="none",
    ),
    "quotas": ContextKeyDoc(
        (
            'tool calls per principal or tenant per UTC day or month, rule → `"<N>/day"` or `"<N>/month"` '
            "(`principal` or `tenant`, or `principal:day` and `principal:month` for both), e.g. "
            '`{"principal": "1000/day", "tenant:month": "100000/month"}`; read from the usage the ingest '
            "function keeps in the session table (no new resource)"
        ),
        default="none",
    ),
    "alarm_email": ContextKeyDoc(
        "an address subscribed to the alarm topic (it confirms by mail)",
        default="none",
    ),
    "subscriptions": ContextKeyDoc(
        (
            "notification streams: 2025 `GET /mcp` + `resources/subscribe`, 2026 `subscriptions/listen`, and "
            "the `subscribe`/`listChanged` capabilities; each open stream holds a Lambda invocation (see "
            "Subscriptions for what that costs)"
        ),
    ),
    "otlp_endpoint": ContextKeyDoc(
        (
            "span export: `xray` (X-Ray's OTLP endpoint, signed with the functions' roles; needs CloudWatch "
            "Transaction Search) or an OTLP/HTTP backend's https base URL (needs `dax=false`). Adds the "
            "OpenTelemetry collector extension layer to every function, which forwards one span per MCP "
            "request, task run and stream record; unset, no layer and no span code runs (see Observability)"
        ),
        default="none",
    ),
    "otlp_headers": ContextKeyDoc(
        "headers the exporter sends to an https `otlp_endpoint` (comma-separated names), e.g. `x-honeycomb-team`",
        default="none",
    ),
    "otlp_headers_secret": ContextKeyDoc(
        (
            "the Secrets Manager secret (name or ARN) whose JSON object holds the value of each of `otlp_headers`; "
            "read by the collector at start, granted to the functions"
        ),
        default="none",
    ),
}


def default_text(key: str) -> str:
    doc = KEYS[key]
    if doc.default is not None:
        return doc.default
    value: Any = DEFAULTS[key]
    return "`" + (json.dumps(value) if not isinstance(value, str) else (value or '""')) + "`"


def markdown_table() -> str:
    rows = ["| key | default | meaning |", "|---|---|---|"]
    rows += [f"| `{key}` | {default_text(key)} | {KEYS[key].meaning} |" for key in DEFAULTS]
    return "\n".join(rows)
