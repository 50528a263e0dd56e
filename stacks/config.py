"""Platform configuration: every CDK context key, its default, and its validation.

All settings come from CDK context (``cdk.json`` or ``-c key=value``); nothing needs AWS
credentials, so synth runs offline. ``-c`` values arrive as strings, so every reader accepts
the string form too. A bad value raises :class:`ContextError` naming the key and what is
allowed, which fails synth before any construct is built.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp_platform.config import COMPATIBLE_RELEASES
from stacks.deployment import DEFAULT_DEPLOYMENT, DEV_DEPLOYMENT, DeploymentStrategy, InvalidDeployment
from stacks.edge_config import EDGE_DEFAULTS, edge_context
from stacks.oauth_config import OAUTH_DEFAULTS, SECRET_REFERENCE, oauth_context

# The Lambda runtime's Python is named once, in .python-version: the Makefile builds the venv the
# tests run in and the layer with it, so what is deployed is the Python the tests ran.
PYTHON_VERSION_FILE = Path(__file__).resolve().parent.parent / ".python-version"
LAMBDA_PYTHONS = ("3.12", "3.13", "3.14")

STAGE_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,15}$")
EMAIL_PATTERN = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
ORIGIN_PATTERN = re.compile(r"^https?://[A-Za-z0-9.-]+(:\d{1,5})?$")
DEV_STAGES = frozenset({"dev", "test", "sandbox"})
STREAM_MODES = ("ON_DEMAND", "PROVISIONED")
# ``profile``: a named set of defaults for other keys; a key set explicitly still wins. ``minimal`` is
# the cheapest sound deployment (docs/operating/deploying.md, "What it costs to leave running"): no
# DAX (so no VPC and no interface endpoints), one PROVISIONED shard with the 24 h retention included
# in its price, and the ingest mapping reading that shard directly instead of through an enhanced
# fan-out consumer (one consumer on one shard: the shared 2 MB/s and 5 reads/s are all its own).
PROFILES: dict[str, dict[str, Any]] = {
    "minimal": {
        "dax": False,
        "stream_mode": "PROVISIONED",
        "shard_count": 1,
        "retention_hours": 24,
        "ingest_fan_out": False,
    },
}
OTLP_XRAY = "xray"
OTLP_URL_PATTERN = re.compile(r"^https://[A-Za-z0-9.-]+(:\d{1,5})?(/[^\s]*)?$")
HEADER_NAME_PATTERN = re.compile(r"^[A-Za-z0-9-]{1,64}$")
ARCHITECTURES = ("arm64", "x86_64")
# "none" is for local loopback only (SPEC: default deny); CLOUD_AUTH_MODES and the OAuth keys'
# rules live in stacks/oauth_config.py.
REMOVAL_POLICIES = ("destroy", "retain")
MCP_PATH = "/mcp"
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827)
# Lambda's own log lines (its system log level): INFO writes START/END/REPORT (platform.start,
# platform.report) for every invocation, WARN only what went wrong; DEBUG adds more.
SYSTEM_LOG_LEVELS = ("DEBUG", "INFO", "WARN")
# Lambda's X-Ray tracing mode of every function: "active" samples invocations (X-Ray's default
# rule, 1 a second and 5% of the rest); "pass_through" traces only requests an upstream sampled.
TRACING_MODES = ("active", "pass_through")


class ContextError(ValueError):
    """A CDK context value is invalid; the message names the key and the allowed values."""


# key -> default. The README's configuration table is generated from this mapping's order.
DEFAULTS: dict[str, Any] = {
    "stage": "dev",
    "profile": None,  # None = each key's own default; "minimal" = PROFILES["minimal"] under explicit keys
    "dax": True,
    "stream_mode": "ON_DEMAND",
    "shard_count": None,  # PROVISIONED only; None = derived from the K6 sizing inputs
    "peak_records_per_s": 1000,
    "avg_record_bytes": 1024,
    "retention_hours": 168,
    "ingest_fan_out": True,  # K5: the ingest mapping reads through an enhanced fan-out consumer
    "log_retention_days": 30,
    "system_log_level": None,  # None = derived: INFO in dev stages, WARN elsewhere
    "tracing": "pass_through",
    "auth_mode": "api_key",
    **OAUTH_DEFAULTS,
    "allowed_origins": [],
    **EDGE_DEFAULTS,  # the public edge in front of the endpoint (stacks/edge_config.py)
    "architecture": "arm64",
    "lambda_python": PYTHON_VERSION_FILE.read_text().strip(),  # the runtime of every function and the layer
    "removal_policy": None,  # None = derived: destroy in dev stages, retain elsewhere
    "dax_node_type": "dax.t3.small",
    "dax_nodes": 1,
    "dax_item_ttl_seconds": 300,
    "dax_query_ttl_seconds": 60,
    "session_ttl_seconds": 3600,
    "compatible_with": "",  # a release that may still serve beside this one: its stored formats are written
    "audit_retention_days": 365,
    "subscriptions": False,  # notification streams (GET, subscriptions/listen): each open one holds a Lambda
    "tasks": True,  # the task worker (tasks extension): idle, it costs nothing but its queue's polling
    "task_max_attempts": 3,  # worker attempts of one task before it is recorded failed
    "task_worker_concurrency": None,  # reserved concurrency of the task worker; None = unreserved
    # Reserved concurrency of the public endpoint; None = unreserved. Set, a flood of requests can
    # use at most this many environments (the rest are answered 429), and never the ingest, audit
    # and worker functions' share of the account's concurrency.
    "endpoint_reserved_concurrency": None,
    # Environments of the endpoint kept initialized on its live alias (no cold start); None = none.
    "endpoint_provisioned_concurrency": None,
    # How a deployment moves each function's live alias (stacks/deployment.py); None = derived:
    # all_at_once in dev stages, canary10_5min elsewhere.
    "deployment": None,
    # Governance (stacks/governance.py): rule -> "<N>/<period>", a JSON object or its text; None = off.
    "rate_limits": None,  # admission limits shared by every instance (a counters table)
    "quotas": None,  # per day/month, read from the usage ingest keeps
    "alarm_email": None,  # an address subscribed to the alarm topic (it confirms by mail); None = none
    # Span export (stacks/telemetry.py): None = off (no layer, no variable, nothing imported);
    # "xray" = X-Ray's OTLP endpoint in the stack's region; an https URL = any OTLP/HTTP backend.
    "otlp_endpoint": None,
    "otlp_headers": [],  # header names the exporter sends, their values read from otlp_headers_secret
    "otlp_headers_secret": None,  # a Secrets Manager secret (name or ARN): a JSON object, header -> value
}


def shards_for(peak_records_per_s: int, avg_record_bytes: int) -> int:
    """K6: ceil(peak records/s x average record bytes / 1e6 / 0.85), and the 1000 records/s per
    shard limit at the same utilisation; at least one. One formula, the planner's."""
    from stacks.shard_planner import Workload, shard_count

    return shard_count(Workload(peak_records_per_s=peak_records_per_s, avg_record_bytes=avg_record_bytes))


@dataclass(frozen=True)
class PlatformConfig:
    stage: str
    profile: str | None  # None or a PROFILES name: its defaults are already resolved into the keys below
    dax: bool
    stream_mode: str
    shard_count: int | None  # resolved: set for PROVISIONED, None for ON_DEMAND
    peak_records_per_s: int
    avg_record_bytes: int
    retention_hours: int
    ingest_fan_out: bool  # False: the ingest mapping reads the stream's shards directly (shared throughput)
    log_retention_days: int
    system_log_level: str  # resolved: "DEBUG" | "INFO" | "WARN"
    tracing: str  # "active" | "pass_through"
    auth_mode: str  # "api_key", "oauth" or "api_key,oauth"
    oauth_issuer: str
    oauth_audience: str
    oauth_scopes: tuple[str, ...]
    oauth_jwks_url: str
    oauth_client_ids: tuple[str, ...]
    oauth_cognito: bool  # a Cognito user pool as the authorization server (stacks/cognito.py)
    oauth_cognito_callback_urls: tuple[str, ...]
    oauth_facade: bool  # the authorization-server facade on the Function URL (stacks/oauth_facade.py)
    oauth_upstream_client_secret: str  # the facade's client at oauth_issuer (not with Cognito)
    oauth_upstream_scopes: tuple[str, ...]
    oauth_machine_client: bool  # a Cognito app client for the client_credentials grant
    oauth_tenant_claim: str  # the token claim naming the caller's tenant ("" = no tenants from tokens)
    allowed_origins: tuple[str, ...]
    edge: str  # "none" (the Function URL), "cloudfront" or "api_gateway"
    domain_name: str | None  # the edge's custom domain
    certificate_arn: str | None
    hosted_zone_id: str | None  # a DNS-validated certificate and the alias record in this zone
    region: str | None  # the platform stack's region; None = environment-agnostic
    waf_rate_limit: int  # requests per caller IP per 5 minutes
    api_throttle_rate: int
    api_throttle_burst: int
    origin_verify_key: str  # the key id of the origin-verify secret the distribution sends
    architecture: str
    lambda_python: str  # "3.13": the runtime (python3.13) and the layer's wheels
    removal_policy: str  # resolved: "destroy" | "retain"
    dax_node_type: str
    dax_nodes: int
    dax_item_ttl_seconds: int
    dax_query_ttl_seconds: int
    session_ttl_seconds: int
    compatible_with: str  # "" or one of the runtime's COMPATIBLE_RELEASES
    audit_retention_days: int
    subscriptions: bool
    tasks: bool
    task_max_attempts: int
    task_worker_concurrency: int | None
    endpoint_reserved_concurrency: int | None
    endpoint_provisioned_concurrency: int | None
    deployment: DeploymentStrategy  # resolved: the stage's default when unset
    rate_limits: str | None  # canonical JSON of the validated rules, or None (off)
    quotas: str | None  # canonical JSON of the validated quotas, or None (off)
    alarm_email: str | None
    otlp_endpoint: str | None  # None (off), "xray", or an https OTLP/HTTP base URL
    otlp_headers: tuple[str, ...]
    otlp_headers_secret: str | None

    @property
    def is_dev(self) -> bool:
        return self.stage in DEV_STAGES

    @property
    def public_url(self) -> str | None:
        """The MCP endpoint's URL as callers know it, when it is known at synth: on the custom
        domain, else ``oauth_audience``; None = the Function URL, derived per request."""
        if self.domain_name is not None:
            return f"https://{self.domain_name}{MCP_PATH}"
        return self.oauth_audience or None

    @property
    def browser_origins(self) -> tuple[str, ...]:
        """The Origin allow-list (S8): ``allowed_origins`` and the public origin (its own pages)."""
        public = self.public_origin
        return self.allowed_origins + ((public,) if public and public not in self.allowed_origins else ())

    @property
    def public_origin(self) -> str | None:
        """``https://host`` of :attr:`public_url`: the Origin its own pages post from."""
        if self.public_url is None:
            return None
        parts = urlsplit(self.public_url)
        return f"{parts.scheme}://{parts.netloc}"

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> PlatformConfig:
        """Reads and validates every key; ``get`` is ``node.try_get_context``."""

        def given(key: str) -> Any:
            value = get(key)
            return None if value is None or value == "" else value

        profile = given("profile")
        if profile is not None and profile not in PROFILES:
            raise _fail("profile", "one of " + ", ".join(PROFILES), profile)
        profile_defaults = PROFILES.get(profile, {}) if profile is not None else {}

        def raw(key: str) -> Any:
            value = given(key)
            if value is not None:
                return value
            return profile_defaults[key] if key in profile_defaults else DEFAULTS[key]

        stage = _choice_pattern("stage", raw("stage"), STAGE_PATTERN, "lowercase letters, digits, '-'")
        stream_mode = _choice("stream_mode", str(raw("stream_mode")).upper(), STREAM_MODES)
        peak = _int("peak_records_per_s", raw("peak_records_per_s"), 1, 10_000_000)
        avg = _int("avg_record_bytes", raw("avg_record_bytes"), 1, 1_048_576)
        shard_count: int | None = None
        if stream_mode == "PROVISIONED":
            explicit = raw("shard_count")
            shard_count = shards_for(peak, avg) if explicit is None else _int("shard_count", explicit, 1, 10_000)
        removal = raw("removal_policy")
        if removal is None:
            removal = "destroy" if stage in DEV_STAGES else "retain"
        item_ttl = _int("dax_item_ttl_seconds", raw("dax_item_ttl_seconds"), 1, 86_400)
        query_ttl = _int("dax_query_ttl_seconds", raw("dax_query_ttl_seconds"), 1, 86_400)
        dax = _bool("dax", raw("dax"))
        oauth = oauth_context(raw, _fail, dax=dax)
        edge = edge_context(
            raw, _fail, _int, oauth="oauth" in oauth["auth_mode"].split(","), oauth_audience=oauth["oauth_audience"]
        )
        rate_limits, quotas = _governance(raw, facade=oauth["oauth_facade"])
        reserved = _optional_int("endpoint_reserved_concurrency", raw("endpoint_reserved_concurrency"), 1, 10_000)
        return cls(
            stage=stage,
            profile=profile,
            dax=dax,
            stream_mode=stream_mode,
            shard_count=shard_count,
            peak_records_per_s=peak,
            avg_record_bytes=avg,
            retention_hours=_int("retention_hours", raw("retention_hours"), 24, 8760),  # K7
            ingest_fan_out=_bool("ingest_fan_out", raw("ingest_fan_out")),
            log_retention_days=_log_retention(raw("log_retention_days")),
            system_log_level=_choice(
                "system_log_level",
                str(raw("system_log_level") or ("INFO" if stage in DEV_STAGES else "WARN")).upper(),
                SYSTEM_LOG_LEVELS,
            ),
            tracing=_choice("tracing", str(raw("tracing")).lower(), TRACING_MODES),
            **oauth,
            allowed_origins=_origins(raw("allowed_origins")),
            **edge,
            architecture=_choice("architecture", raw("architecture"), ARCHITECTURES),
            lambda_python=_choice("lambda_python", str(raw("lambda_python")), LAMBDA_PYTHONS),
            removal_policy=_choice("removal_policy", str(removal).lower(), REMOVAL_POLICIES),
            dax_node_type=_choice_pattern(
                "dax_node_type", raw("dax_node_type"), re.compile(r"^dax\.[a-z0-9]+\.[a-z0-9]+$"), "dax.<family>.<size>"
            ),
            dax_nodes=_int("dax_nodes", raw("dax_nodes"), 1, 11),
            dax_item_ttl_seconds=item_ttl,
            dax_query_ttl_seconds=query_ttl,
            session_ttl_seconds=_int("session_ttl_seconds", raw("session_ttl_seconds"), 60, 30 * 86_400),
            compatible_with=_choice("compatible_with", str(raw("compatible_with")).strip(), COMPATIBLE_RELEASES),
            audit_retention_days=_int("audit_retention_days", raw("audit_retention_days"), 1, 3650),
            subscriptions=_bool("subscriptions", raw("subscriptions")),
            tasks=_bool("tasks", raw("tasks")),
            task_max_attempts=_int("task_max_attempts", raw("task_max_attempts"), 1, 10),
            task_worker_concurrency=_optional_int("task_worker_concurrency", raw("task_worker_concurrency"), 1, 1000),
            endpoint_reserved_concurrency=reserved,
            endpoint_provisioned_concurrency=_provisioned(raw("endpoint_provisioned_concurrency"), reserved),
            deployment=_deployment(raw("deployment"), dev=stage in DEV_STAGES),
            rate_limits=rate_limits,
            quotas=quotas,
            alarm_email=None
            if raw("alarm_email") is None
            else _choice_pattern("alarm_email", raw("alarm_email"), EMAIL_PATTERN, "an email address"),
            **_otlp(raw, dax=dax),
        )


def _provisioned(value: Any, reserved: int | None) -> int | None:
    """Provisioned environments come out of the function's reserved concurrency when it has one."""
    provisioned = _optional_int("endpoint_provisioned_concurrency", value, 1, 10_000)
    if provisioned is not None and reserved is not None and provisioned > reserved:
        raise _fail("endpoint_provisioned_concurrency", f"at most endpoint_reserved_concurrency ({reserved})", value)
    return provisioned


def _deployment(value: Any, *, dev: bool) -> DeploymentStrategy:
    if value is None:
        return DEV_DEPLOYMENT if dev else DEFAULT_DEPLOYMENT
    try:
        return DeploymentStrategy.parse(value)
    except InvalidDeployment as error:
        raise _fail("deployment", str(error), value) from None


def _otlp(raw: Callable[[str], Any], *, dax: bool) -> dict[str, Any]:
    """The span export keys: off unless ``otlp_endpoint`` is set; headers come with their secret."""
    endpoint = raw("otlp_endpoint")
    headers = _header_names(raw("otlp_headers"))
    secret = raw("otlp_headers_secret")
    if endpoint is None:
        if headers or secret is not None:
            raise _fail("otlp_endpoint", "set when otlp_headers or otlp_headers_secret is", endpoint)
        return {"otlp_endpoint": None, "otlp_headers": (), "otlp_headers_secret": None}
    endpoint = str(endpoint).strip()
    if endpoint != OTLP_XRAY and not OTLP_URL_PATTERN.fullmatch(endpoint):
        raise _fail("otlp_endpoint", f"{OTLP_XRAY!r} or an https URL (an OTLP/HTTP backend's base URL)", endpoint)
    if endpoint != OTLP_XRAY and dax:
        # The DAX VPC's subnets are isolated: only AWS services with an endpoint in it are reachable.
        raise _fail("otlp_endpoint", f"{OTLP_XRAY!r} with dax=true (the VPC has no route to the internet)", endpoint)
    if endpoint == OTLP_XRAY and (headers or secret is not None):
        raise _fail("otlp_headers", "empty with otlp_endpoint=xray (requests are signed with the role)", headers)
    if bool(headers) != (secret is not None):
        raise _fail("otlp_headers_secret", "set exactly when otlp_headers names headers", secret)
    if secret is not None and not (isinstance(secret, str) and SECRET_REFERENCE.fullmatch(secret)):
        raise _fail("otlp_headers_secret", "a Secrets Manager secret name or ARN", secret)
    return {"otlp_endpoint": endpoint, "otlp_headers": headers, "otlp_headers_secret": secret}


def _governance(raw: Callable[[str], Any], *, facade: bool) -> tuple[str | None, str | None]:
    """``rate_limits`` / ``quotas``: validated by the functions the endpoint and ingest use
    (``application.governance.rules``), so synth accepts exactly the rules they enforce. Each a
    JSON object (cdk.json) or its text (``-c``); kept as canonical JSON text, None when empty."""
    from mcp_platform.application.governance.rules import (
        RuleError,
        parse_quotas,
        parse_rate_limits,
        require_enforceable,
    )

    try:
        rate_rules = parse_rate_limits(raw("rate_limits"), name="rate_limits")
        quota_rules = parse_quotas(raw("quotas"), name="quotas")
        require_enforceable(rate_rules, facade=facade)
    except RuleError as error:
        raise ContextError(str(error)) from None
    return (
        _canonical_json(raw("rate_limits")) if rate_rules else None,
        _canonical_json(raw("quotas")) if quota_rules else None,
    )


def _canonical_json(value: str | dict[str, str]) -> str:
    rules = json.loads(value) if isinstance(value, str) else dict(value)
    return json.dumps(rules, sort_keys=True, separators=(",", ":"))


def _header_names(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise _fail("otlp_headers", "a list of header names (or a comma-separated string)", value)
    names = tuple(str(item).strip() for item in items if str(item).strip())
    for name in names:
        if not HEADER_NAME_PATTERN.fullmatch(name):
            raise _fail("otlp_headers", "header names (letters, digits, '-')", name)
    return names


def _optional_int(key: str, value: Any, minimum: int, maximum: int) -> int | None:
    return None if value is None else _int(key, value, minimum, maximum)


def _fail(key: str, expected: str, value: Any) -> ContextError:
    return ContextError(f"CDK context '{key}' must be {expected}, got {value!r}")


def _int(key: str, value: Any, minimum: int, maximum: int) -> int:
    if isinstance(value, bool):  # bool is an int subclass: `true` is not a number here
        raise _fail(key, f"an integer between {minimum} and {maximum}", value)
    try:
        number = int(str(value).strip())
    except ValueError:
        raise _fail(key, f"an integer between {minimum} and {maximum}", value) from None
    if not minimum <= number <= maximum:
        raise _fail(key, f"an integer between {minimum} and {maximum}", value)
    return number


def _bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise _fail(key, "true or false", value)


def _choice(key: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise _fail(key, "one of " + ", ".join(allowed), value)
    return str(value)


def _choice_pattern(key: str, value: Any, pattern: re.Pattern[str], described: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise _fail(key, f"a string matching {pattern.pattern} ({described})", value)
    return value


def _log_retention(value: Any) -> int:
    days = _int("log_retention_days", value, 1, 1827)
    if days not in LOG_RETENTION_DAYS:
        raise _fail("log_retention_days", "one of " + ", ".join(map(str, LOG_RETENTION_DAYS)), value)
    return days


def _origins(value: Any) -> tuple[str, ...]:
    """S8: an explicit allow-list of origins; '*' is refused, so is anything with a path."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise _fail("allowed_origins", "a list of origins (or a comma-separated string)", value)
    origins = tuple(str(item).strip() for item in items if str(item).strip())
    for origin in origins:
        if not ORIGIN_PATTERN.fullmatch(origin):
            raise _fail("allowed_origins", "origins like https://app.example.com (no '*', no path)", origin)
    return origins
