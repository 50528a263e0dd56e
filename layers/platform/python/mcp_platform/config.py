"""Runtime configuration: every environment variable the platform reads is named here.

The CDK stacks set these variables on the functions (see ``stacks/``), the local platform sets
them for uvicorn and the pollers, and tests pass a plain mapping to :meth:`Settings.from_mapping`
so nothing needs monkeypatching. Values are validated at start-up: a bad value raises
:class:`ConfigError` naming the variable, before the first request is served.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

CONTEXT_IN_ITEMS = "items"
CONTEXT_IN_LIST = "list"
"""Where a write puts the session context entries it appends: a context item of their own (D1/D3
as amended), or the metadata item's ``context`` list, as releases before the context items did.
Reads take both: the list, then the items."""
RELEASE_0_1 = "0.1"
RELEASE_0_2 = "0.2"
RELEASE_0_3 = "0.3"
COMPATIBLE_RELEASES = ("", RELEASE_0_1, RELEASE_0_2, RELEASE_0_3)
"""``COMPATIBLE_WITH``: the earliest release that may still serve beside this one (a canary, a
rollback), whose stored formats this one then writes ("": none, today's formats). Release 0.1
reads a session's context from its metadata list and audit items with every attribute, the diff
and the images as text; releases up to 0.3 read a committed call's event on its record as the
whole wire JSON (docs/operating/upgrades.md, "Two versions at once")."""


class ConfigError(ValueError):
    """A configuration value is missing or invalid."""


class EnvVars:
    """Names of the environment variables (the single source of truth)."""

    STAGE = "PLATFORM_STAGE"
    REGION = "AWS_REGION"
    SESSION_TABLE = "SESSION_TABLE_NAME"
    AUDIT_TABLE = "AUDIT_TABLE_NAME"
    DAX_ENDPOINT = "DAX_ENDPOINT"  # daxs://... ; empty = DAX off (X5)
    EVENT_STREAM = "EVENT_STREAM_NAME"
    EVENT_STREAM_ARN = "EVENT_STREAM_ARN"
    PRODUCER_DLQ_URL = "PRODUCER_DLQ_URL"
    EXPIRY_EVENTS_DLQ_URL = "EXPIRY_EVENTS_DLQ_URL"
    # Read by the DLQ redrive command only (python -m mcp_platform.ops): the mappings' DLQs.
    INGEST_DLQ_URL = "INGEST_DLQ_URL"
    AUDIT_DLQ_URL = "AUDIT_DLQ_URL"
    TASK_DLQ_URL = "MCP_TASK_DLQ_URL"
    SESSION_TTL_SECONDS = "SESSION_TTL_SECONDS"
    COMPATIBLE_WITH = "COMPATIBLE_WITH"  # COMPATIBLE_RELEASES; empty = today's formats
    AUDIT_RETENTION_DAYS = "AUDIT_RETENTION_DAYS"
    EVENT_RETENTION_HOURS = "EVENT_RETENTION_HOURS"
    AUTH_MODE = "MCP_AUTH"  # api_key | oauth | api_key,oauth | none (loopback only)
    OAUTH_ISSUER = "MCP_OAUTH_ISSUER"  # the authorization server's issuer URL (oauth mode)
    OAUTH_AUDIENCE = "MCP_OAUTH_AUDIENCE"  # the resource identifier; empty = derived per request
    OAUTH_SCOPES = "MCP_OAUTH_SCOPES"  # space separated: scopes every request needs
    OAUTH_JWKS_URL = "MCP_OAUTH_JWKS_URL"  # empty = from the issuer's RFC 8414 / OpenID metadata
    OAUTH_CLIENT_IDS = "MCP_OAUTH_CLIENT_IDS"  # comma separated: accepted client_id of aud-less tokens
    # The authorization-server facade on the endpoint's origin (mcp_platform/authorization_server/).
    OAUTH_FACADE = "MCP_OAUTH_FACADE"  # true: /authorize, /token, /register in front of the issuer
    OAUTH_FACADE_KEYS_SECRET = "MCP_OAUTH_FACADE_KEYS_SECRET"  # noqa: S105 - its ARN or name, not a value
    OAUTH_UPSTREAM_CLIENT_SECRET = "MCP_OAUTH_UPSTREAM_CLIENT_SECRET"  # noqa: S105 - ARN or name
    OAUTH_UPSTREAM_SCOPES = "MCP_OAUTH_UPSTREAM_SCOPES"  # space separated; default "openid"
    OAUTH_FACADE_TOKEN_SECONDS = "MCP_OAUTH_FACADE_TOKEN_SECONDS"  # noqa: S105 - access-token lifetime
    OAUTH_FACADE_REFRESH_SECONDS = "MCP_OAUTH_FACADE_REFRESH_SECONDS"  # a sign-in's refresh lifetime
    OAUTH_FACADE_CLIENT_SECONDS = "MCP_OAUTH_FACADE_CLIENT_SECONDS"  # a registration unused this long expires
    OAUTH_TENANT_CLAIM = "MCP_OAUTH_TENANT_CLAIM"  # the token claim naming the caller's tenant
    OAUTH_CLIENT_CREDENTIALS = "MCP_OAUTH_CLIENT_CREDENTIALS"  # true: advertise the client-credentials extension
    ALLOWED_ORIGINS = "MCP_ALLOWED_ORIGINS"  # comma separated
    ALLOWED_HOSTS = "MCP_ALLOWED_HOSTS"  # comma separated; empty = any Host
    # edge=cloudfront: the secret (ARN) with the values of the origin-verify header the endpoint
    # requires on every request but its health check; unset = no check (nothing imported).
    ORIGIN_VERIFY_SECRET = "MCP_ORIGIN_VERIFY_SECRET_ARN"  # noqa: S105 - a variable name, not a secret
    MAX_REQUEST_BYTES = "MCP_MAX_REQUEST_BYTES"
    STREAM_MAX_SECONDS = "MCP_STREAM_MAX_SECONDS"  # S7 cap, below the function timeout
    KEEPALIVE_SECONDS = "MCP_KEEPALIVE_SECONDS"
    CANCEL_POLL_SECONDS = "MCP_CANCEL_POLL_SECONDS"  # 2025 streamed call: cancel flag check interval
    BODY_TIMEOUT_SECONDS = "MCP_BODY_TIMEOUT_SECONDS"  # whole request body must arrive within this (408)
    SUBSCRIPTIONS = "MCP_SUBSCRIPTIONS"  # true: GET stream, resources/subscribe, subscriptions/listen
    NOTIFY_POLL_MAX_SECONDS = "MCP_NOTIFY_POLL_MAX_SECONDS"  # an idle stream's slowest poll of the log
    # The Secrets Manager secret (ARN) with the 2026 requestState keys: its id, never its value.
    REQUEST_STATE_SECRET = "MCP_REQUEST_STATE_SECRET_ARN"  # noqa: S105 - a variable name, not a secret
    CLIENT_REQUEST_TIMEOUT_SECONDS = "MCP_CLIENT_REQUEST_TIMEOUT_SECONDS"  # 2025: wait for elicitation etc.
    TASK_QUEUE_URL = "MCP_TASK_QUEUE_URL"  # the task worker's SQS queue; empty = tasks extension off
    TASK_TTL_SECONDS = "MCP_TASK_TTL_SECONDS"  # how long a task (and its result) stays readable
    TASK_MAX_ATTEMPTS = "MCP_TASK_MAX_ATTEMPTS"  # worker attempts of one task before it is failed
    AWS_ENDPOINT_URL = "AWS_ENDPOINT_URL"  # local emulator only
    # Governance (mcp_platform.application.governance): JSON objects rule -> "<N>/<period>";
    # empty = off (no AWS call added). The counters of the rate limits live in their own table.
    RATE_LIMITS = "MCP_RATE_LIMITS"
    QUOTAS = "MCP_QUOTAS"  # read by the endpoint (enforced) and by ingest (it keeps the totals)
    LIMITS_TABLE = "LIMITS_TABLE_NAME"
    # Per-tool policies (mcp_platform.application.policies): a folder of *.cedar files; empty = the
    # app's own, ``policies/`` beside its features package (functions/endpoint/policies).
    POLICIES_DIR = "MCP_POLICIES_DIR"
    # Every function's JSON log lines and EMF metric lines (mcp_platform.application.metrics).
    LOG_LEVEL = "MCP_LOG_LEVEL"
    SERVICE_NAME = "MCP_SERVICE_NAME"
    METRICS_NAMESPACE = "MCP_METRICS_NAMESPACE"
    # Optional span export (OpenTelemetry's own variable names): the OTLP/HTTP traces URL, or the
    # base URL it is derived from (+ /v1/traces). Unset: no span is recorded, nothing is imported.
    OTLP_TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    OTLP_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"


AUTH_MODES = ("api_key", "none", "oauth")
# What MCP_AUTH may name: one mode, or API keys and OAuth together (migration). Never "none"
# with another mode: anonymous access next to credentials would make the credentials moot.
AUTH_COMBINATIONS = (frozenset({"api_key"}), frozenset({"none"}), frozenset({"oauth"}), frozenset({"api_key", "oauth"}))
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


def _int(env: Mapping[str, str], name: str, default: int, minimum: int, maximum: int) -> int:
    raw = env.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from exc
    if not minimum <= value <= maximum:
        raise ConfigError(f"{name} must be between {minimum} and {maximum}, got {value}")
    return value


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _log_level(env: Mapping[str, str]) -> str:
    level = (env.get(EnvVars.LOG_LEVEL, "") or "INFO").strip().upper()
    if level not in LOG_LEVELS:
        raise ConfigError(f"{EnvVars.LOG_LEVEL} must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
    return level


def _otlp_traces_endpoint(env: Mapping[str, str]) -> str:
    url = env.get(EnvVars.OTLP_TRACES_ENDPOINT, "").strip()
    if not url and env.get(EnvVars.OTLP_ENDPOINT, "").strip():
        url = env[EnvVars.OTLP_ENDPOINT].strip().rstrip("/") + "/v1/traces"
    if url and not url.startswith(("http://", "https://")):
        raise ConfigError(f"{EnvVars.OTLP_TRACES_ENDPOINT} must be an http(s) URL, got {url!r}")
    return url


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """One of ``choices``; the first when the variable is unset or empty."""
    value = env.get(name, "").strip() or choices[0]
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return value


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw not in ("", "true", "false"):
        raise ConfigError(f"{name} must be true or false, got {raw!r}")
    return raw == "true"


def _csv(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in env.get(name, "").split(",") if part.strip())


def _auth_mode(env: Mapping[str, str]) -> str:
    raw = env.get(EnvVars.AUTH_MODE, "api_key") or "api_key"
    modes = frozenset(part.strip() for part in raw.split(",") if part.strip())
    if modes not in AUTH_COMBINATIONS:
        allowed = ", ".join(",".join(m for m in AUTH_MODES if m in combo) for combo in AUTH_COMBINATIONS)
        raise ConfigError(f"{EnvVars.AUTH_MODE} must be one of {allowed}, got {raw!r}")
    return ",".join(mode for mode in AUTH_MODES if mode in modes)  # canonical order


def checked_url(name: str, value: str) -> str:
    """An absolute https URL, or http on loopback only (a token's issuer and its keys must not
    travel in clear text off the machine)."""
    parts = urlsplit(value)
    host = parts.hostname or ""
    if parts.scheme not in ("https", "http") or not host or parts.fragment:
        raise ConfigError(f"{name} must be an absolute https URL, got {value!r}")
    if parts.scheme == "http" and not (host in LOOPBACK_HOSTS or host.startswith("127.")):
        raise ConfigError(f"{name} must use https (http is accepted on loopback only), got {value!r}")
    return value


@dataclass(frozen=True)
class FacadeSettings:
    """The authorization-server facade (``MCP_OAUTH_FACADE=true``): the endpoint's own origin
    serves RFC 8414 metadata, registration, authorization and tokens, signing the user in at
    the upstream issuer (``MCP_OAUTH_ISSUER``) as a confidential client."""

    keys_secret: str
    """Secrets Manager secret (ARN or name) with the token-signing keys: ``{"current": kid, kid: seed}``."""
    upstream_client_secret: str
    """Secrets Manager secret (ARN or name) with ``{"client_id": ..., "client_secret": ...}`` of
    the facade's own client at the upstream issuer."""
    upstream_scopes: tuple[str, ...] = ("openid",)
    access_token_seconds: int = 3600
    refresh_token_seconds: int = 7 * 24 * 3600
    """How long one sign-in can be refreshed (absolute, from the sign-in): a user disabled at the
    upstream issuer keeps access at most this long."""
    client_seconds: int = 30 * 24 * 3600
    """A registered client unused this long expires (each token grant extends it)."""

    @classmethod
    def from_mapping(cls, env: Mapping[str, str]) -> FacadeSettings:
        keys = env.get(EnvVars.OAUTH_FACADE_KEYS_SECRET, "")
        upstream = env.get(EnvVars.OAUTH_UPSTREAM_CLIENT_SECRET, "")
        for name, value in ((EnvVars.OAUTH_FACADE_KEYS_SECRET, keys), (EnvVars.OAUTH_UPSTREAM_CLIENT_SECRET, upstream)):
            if not value:
                raise ConfigError(f"{name} is required when {EnvVars.OAUTH_FACADE} is on")
        scopes = tuple(dict.fromkeys(env.get(EnvVars.OAUTH_UPSTREAM_SCOPES, "").split())) or ("openid",)
        if "openid" not in scopes:
            raise ConfigError(f"{EnvVars.OAUTH_UPSTREAM_SCOPES} must include openid (the ID token names the user)")
        return cls(
            keys_secret=keys,
            upstream_client_secret=upstream,
            upstream_scopes=scopes,
            access_token_seconds=_int(env, EnvVars.OAUTH_FACADE_TOKEN_SECONDS, 3600, 60, 24 * 3600),
            refresh_token_seconds=_int(env, EnvVars.OAUTH_FACADE_REFRESH_SECONDS, 7 * 24 * 3600, 300, 90 * 24 * 3600),
            client_seconds=_int(env, EnvVars.OAUTH_FACADE_CLIENT_SECONDS, 30 * 24 * 3600, 3600, 365 * 24 * 3600),
        )


def facade_enabled(env: Mapping[str, str]) -> bool:
    """``MCP_OAUTH_FACADE``: true/false, or 1/0 as a developer types it (``MCP_OAUTH_FACADE=1 make dev``)."""
    raw = env.get(EnvVars.OAUTH_FACADE, "").strip().lower()
    if raw not in ("", "true", "false", "1", "0"):
        raise ConfigError(f"{EnvVars.OAUTH_FACADE} must be true or false, got {raw!r}")
    return raw in ("true", "1")


@dataclass(frozen=True)
class OAuthSettings:
    """OAuth 2.1 resource-server mode (``MCP_AUTH`` includes ``oauth``)."""

    issuer: str
    audience: str = ""
    """The resource identifier tokens must name in ``aud``; empty = the canonical URL derived
    from the request's Host (Function URL or loopback names only, see ``auth/resource.py``)."""
    scopes: tuple[str, ...] = ()
    jwks_url: str = ""
    client_ids: tuple[str, ...] = ()
    """Identity providers without ``aud`` in access tokens (Amazon Cognito): such a token is
    accepted only when its ``client_id`` is listed here."""
    facade: FacadeSettings | None = None
    """The authorization-server facade in front of ``issuer``; None: clients go to the issuer."""
    client_credentials: bool = False
    """Machine clients sign in at the issuer with client_credentials: the extension is advertised."""
    tenant_claim: str = ""
    """The claim naming the caller's tenant; set, a token without a valid one is refused."""

    @classmethod
    def from_mapping(cls, env: Mapping[str, str]) -> OAuthSettings:
        issuer = env.get(EnvVars.OAUTH_ISSUER, "")
        if not issuer:
            raise ConfigError(f"{EnvVars.OAUTH_ISSUER} is required when {EnvVars.AUTH_MODE} includes oauth")
        audience = env.get(EnvVars.OAUTH_AUDIENCE, "")
        jwks_url = env.get(EnvVars.OAUTH_JWKS_URL, "")
        return cls(
            issuer=checked_url(EnvVars.OAUTH_ISSUER, issuer),
            audience=checked_url(EnvVars.OAUTH_AUDIENCE, audience) if audience else "",
            scopes=tuple(dict.fromkeys(env.get(EnvVars.OAUTH_SCOPES, "").split())),
            jwks_url=checked_url(EnvVars.OAUTH_JWKS_URL, jwks_url) if jwks_url else "",
            client_ids=_csv(env, EnvVars.OAUTH_CLIENT_IDS),
            facade=FacadeSettings.from_mapping(env) if facade_enabled(env) else None,
            client_credentials=_flag(env, EnvVars.OAUTH_CLIENT_CREDENTIALS),
            tenant_claim=env.get(EnvVars.OAUTH_TENANT_CLAIM, "").strip(),
        )


@dataclass(frozen=True)
class Settings:
    """Validated runtime settings shared by every function."""

    session_table: str
    stage: str = "dev"
    region: str = "us-east-1"
    audit_table: str = ""
    dax_endpoint: str = ""
    event_stream: str = ""
    event_stream_arn: str = ""
    producer_dlq_url: str = ""
    expiry_events_dlq_url: str = ""
    session_ttl_seconds: int = 3600
    compatible_with: str = ""
    """A release from ``COMPATIBLE_RELEASES`` whose stored formats are written, or ""."""
    audit_retention_days: int = 365
    event_retention_hours: int = 168
    auth_mode: str = "api_key"
    """Canonical: ``api_key``, ``oauth``, ``api_key,oauth`` or ``none``."""
    oauth: OAuthSettings | None = None
    allowed_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    origin_verify_secret: str = ""
    """The origin-verify secret (edge=cloudfront): every request but the health check must carry
    one of its values; empty = no check."""
    max_request_bytes: int = 1_048_576
    stream_max_seconds: int = 840
    keepalive_seconds: int = 15
    cancel_poll_seconds: int = 2
    body_timeout_seconds: int = 10
    subscriptions: bool = False
    """Notification streams on (2025 GET + resources/subscribe, 2026 subscriptions/listen)."""
    notify_poll_max_seconds: int = 5
    request_state_secret: str = ""
    """Empty: 2026 multi-round requests are refused (-32603) until a secret is configured."""
    client_request_timeout_seconds: int = 300
    task_queue_url: str = ""
    """The task worker's queue: the tasks extension is advertised and served only when set."""
    task_ttl_seconds: int = 3600
    task_max_attempts: int = 3
    aws_endpoint_url: str = ""
    service_name: str = "mcp-platform"
    metrics_namespace: str = "McpPlatform"
    log_level: str = "INFO"
    otlp_traces_endpoint: str = ""
    """Where spans are sent (OTLP/HTTP); empty = no spans (``mcp_platform.application.spans``)."""
    rate_limits: str = ""
    """JSON text of the rate limits, parsed by ``application.governance.rules``; empty = none."""
    quotas: str = ""
    """JSON text of the quotas, parsed by ``application.governance.rules``; empty = none."""
    limits_table: str = ""
    """The rate-limit counters' table; required when ``rate_limits`` is set."""
    policies_dir: str = ""
    """The folder of the ``*.cedar`` policy files; empty = ``policies/`` beside the features package."""

    @property
    def auth_modes(self) -> frozenset[str]:
        return frozenset(self.auth_mode.split(","))

    @property
    def dax_enabled(self) -> bool:
        return bool(self.dax_endpoint)

    @classmethod
    def from_env(cls) -> Settings:
        return cls.from_mapping(os.environ)

    @classmethod
    def from_mapping(cls, env: Mapping[str, str]) -> Settings:
        session_table = env.get(EnvVars.SESSION_TABLE, "")
        if not session_table:
            raise ConfigError(f"{EnvVars.SESSION_TABLE} is required")
        auth_mode = _auth_mode(env)
        dax_endpoint = env.get(EnvVars.DAX_ENDPOINT, "")
        if dax_endpoint and not dax_endpoint.startswith(("daxs://", "dax://")):
            raise ConfigError(f"{EnvVars.DAX_ENDPOINT} must start with daxs:// (or dax://), got {dax_endpoint!r}")
        stream_max = _int(env, EnvVars.STREAM_MAX_SECONDS, 840, 1, 900)
        keepalive = _int(env, EnvVars.KEEPALIVE_SECONDS, 15, 1, 300)
        if keepalive >= stream_max:
            raise ConfigError(f"{EnvVars.KEEPALIVE_SECONDS} must be below {EnvVars.STREAM_MAX_SECONDS}")
        return cls(
            session_table=session_table,
            stage=env.get(EnvVars.STAGE, "dev") or "dev",
            region=env.get(EnvVars.REGION, "") or env.get("AWS_DEFAULT_REGION", "") or "us-east-1",
            audit_table=env.get(EnvVars.AUDIT_TABLE, ""),
            dax_endpoint=dax_endpoint,
            event_stream=env.get(EnvVars.EVENT_STREAM, ""),
            event_stream_arn=env.get(EnvVars.EVENT_STREAM_ARN, ""),
            producer_dlq_url=env.get(EnvVars.PRODUCER_DLQ_URL, ""),
            expiry_events_dlq_url=env.get(EnvVars.EXPIRY_EVENTS_DLQ_URL, ""),
            session_ttl_seconds=_int(env, EnvVars.SESSION_TTL_SECONDS, 3600, 60, 30 * 24 * 3600),
            compatible_with=_choice(env, EnvVars.COMPATIBLE_WITH, COMPATIBLE_RELEASES),
            audit_retention_days=_int(env, EnvVars.AUDIT_RETENTION_DAYS, 365, 1, 3650),
            event_retention_hours=_int(env, EnvVars.EVENT_RETENTION_HOURS, 168, 24, 8760),
            auth_mode=auth_mode,
            oauth=OAuthSettings.from_mapping(env) if "oauth" in auth_mode.split(",") else None,
            allowed_origins=_csv(env, EnvVars.ALLOWED_ORIGINS),
            allowed_hosts=_csv(env, EnvVars.ALLOWED_HOSTS),
            origin_verify_secret=env.get(EnvVars.ORIGIN_VERIFY_SECRET, "").strip(),
            max_request_bytes=_int(env, EnvVars.MAX_REQUEST_BYTES, 1_048_576, 1024, 6 * 1024 * 1024),
            stream_max_seconds=stream_max,
            keepalive_seconds=keepalive,
            cancel_poll_seconds=_int(env, EnvVars.CANCEL_POLL_SECONDS, 2, 1, 60),
            body_timeout_seconds=_int(env, EnvVars.BODY_TIMEOUT_SECONDS, 10, 1, 300),
            subscriptions=_flag(env, EnvVars.SUBSCRIPTIONS),
            notify_poll_max_seconds=_int(env, EnvVars.NOTIFY_POLL_MAX_SECONDS, 5, 1, 60),
            request_state_secret=env.get(EnvVars.REQUEST_STATE_SECRET, ""),
            client_request_timeout_seconds=_int(env, EnvVars.CLIENT_REQUEST_TIMEOUT_SECONDS, 300, 1, 900),
            task_queue_url=env.get(EnvVars.TASK_QUEUE_URL, ""),
            task_ttl_seconds=_int(env, EnvVars.TASK_TTL_SECONDS, 3600, 60, 7 * 24 * 3600),
            task_max_attempts=_int(env, EnvVars.TASK_MAX_ATTEMPTS, 3, 1, 10),
            aws_endpoint_url=env.get(EnvVars.AWS_ENDPOINT_URL, ""),
            service_name=env.get(EnvVars.SERVICE_NAME, "mcp-platform") or "mcp-platform",
            metrics_namespace=env.get(EnvVars.METRICS_NAMESPACE, "McpPlatform") or "McpPlatform",
            log_level=_log_level(env),
            otlp_traces_endpoint=_otlp_traces_endpoint(env),
            rate_limits=env.get(EnvVars.RATE_LIMITS, "").strip(),
            quotas=env.get(EnvVars.QUOTAS, "").strip(),
            limits_table=env.get(EnvVars.LIMITS_TABLE, ""),
            policies_dir=env.get(EnvVars.POLICIES_DIR, "").strip(),
        )


def session_context_layout(settings: Settings) -> str:
    """Where this deployment's writes put appended context entries (:data:`CONTEXT_IN_ITEMS` unless
    a release from before the context items may still serve)."""
    return CONTEXT_IN_LIST if settings.compatible_with == RELEASE_0_1 else CONTEXT_IN_ITEMS


def committed_event_as_text(settings: Settings) -> bool:
    """Whether a commit stores the call's event on its record whole, as its wire JSON, as
    releases up to 0.3 read it (else only what the record does not already hold)."""
    return settings.compatible_with != ""


def audit_previous_layout(settings: Settings) -> bool:
    """Whether the audit function writes its items in the layout release 0.1 reads."""
    return settings.compatible_with == RELEASE_0_1
