"""Composition root of the endpoint: settings + clients in, ASGI app out.

Built once per process (module scope of ``functions/endpoint/endpoint_app.py``, and the local
platform's endpoint) and reused by every warm request. The shared part (adapters, the tool-call
runner, the tool-facing services) is :mod:`mcp_platform.bootstrap.runtime`; this module adds the
HTTP side: the protocol server, authentication, the response streamer and the ASGI app.
Clients may be injected (tests, the local platform); defaults are built on first use otherwise.

What every start needs is imported at module level. What only an optional feature needs (OAuth
and its facade, notification streams) is imported inside the function that builds it: a stack
without the feature never loads it, which keeps the cold start down.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.adapters.dynamodb.cancellation import CancelFlags
from mcp_platform.application.auth.api_keys import ApiKeyAuthenticator
from mcp_platform.application.auth.base import CLIENT_CREDENTIALS_EXTENSION, Authenticator
from mcp_platform.application.auth.loopback import LoopbackAuthenticator
from mcp_platform.application.blocking import INLINE, Blocking
from mcp_platform.application.cancellation import CallCancellation
from mcp_platform.application.metrics import LineSink, MetricsWriter
from mcp_platform.application.server import McpServer
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.application.transport_sessions import TransportSessions
from mcp_platform.bootstrap.policies import build_policies
from mcp_platform.bootstrap.runtime import build_runtime
from mcp_platform.bootstrap.telemetry import build_spans
from mcp_platform.config import ConfigError, EnvVars, Settings
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.features import ResourcesFeature
from mcp_platform.transport.endpoint import McpEndpoint
from mcp_platform.transport.security import RequestGuard, loopback_hosts
from mcp_platform.transport.streaming import Flush, ResponseStreamer

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient
    from mypy_boto3_secretsmanager import SecretsManagerClient
    from mypy_boto3_sqs import SQSClient

    from mcp_platform.adapters.dynamodb.sessions import SessionStore
    from mcp_platform.adapters.kinesis.producer import EventProducer
    from mcp_platform.application.auth.resource import ProtectedResource
    from mcp_platform.application.governance.admission import Governor
    from mcp_platform.application.notifications import Notifications
    from mcp_platform.authorization_server import LazyFacade
    from mcp_platform.authorization_server.signing import SigningKeys
    from mcp_platform.transport.facade.server import FacadeApp
    from mcp_platform.transport.listen import NotificationStreams
    from mcp_platform.transport.origin_verify import OriginVerifier

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Serverless MCP platform. Call open_session to get a session handle, then pass it as the "
    "'session' argument of session tools (append_note, read_notes, session_info, ...)."
)


def build_protected_resource(settings: Settings, catalog: Catalog) -> ProtectedResource | None:
    """OAuth mode only; the metadata's ``scopes_supported`` includes every tool's scopes."""
    if settings.oauth is None:
        return None
    # Optional feature: an API-key-only stack never loads the OAuth modules.
    from mcp_platform.application.auth.resource import ProtectedResource

    specs = (catalog.tools.get(name) for name in catalog.tools.names())
    tool_scopes = [scope for spec in specs if spec is not None for scope in spec.scopes]
    in_lambda = bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))
    return ProtectedResource.from_settings(settings.oauth, settings.region, tool_scopes, in_lambda=in_lambda)


def build_authenticator(
    settings: Settings,
    dynamodb: DynamoDBClient,
    *,
    bind_host: str,
    resource: ProtectedResource | None = None,
    facade_keys: SigningKeys | None = None,
    blocking: Blocking,
) -> Authenticator:
    if settings.auth_mode == "none":
        if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
            # Behind the Web Adapter every request arrives from loopback: refuse outright.
            raise ConfigError("MCP_AUTH=none is refused inside Lambda")
        if bind_host not in ("127.0.0.1", "localhost", "::1"):
            raise ConfigError("MCP_AUTH=none is accepted only on a loopback bind address")
        return LoopbackAuthenticator()
    api_keys = ApiKeyAuthenticator(ApiKeyStore(settings.session_table, dynamodb), blocking=blocking)
    if settings.oauth is None:
        return api_keys
    if resource is None:
        raise ConfigError("OAuth mode needs the endpoint's protected-resource description")
    # Imported here: an API-key-only stack never loads the OAuth modules (PyJWT loads later still).
    from mcp_platform.adapters.jwks import JwksCache, urllib_fetch
    from mcp_platform.application.auth.combined import KeyOrToken
    from mcp_platform.application.auth.oauth import OAuthAuthenticator

    keys = JwksCache(settings.oauth.issuer, urllib_fetch(), jwks_url=settings.oauth.jwks_url)
    oauth: Authenticator = OAuthAuthenticator(settings.oauth, resource, keys)
    if facade_keys is not None:  # the facade's own tokens first, the issuer's as before
        from mcp_platform.authorization_server.tokens import FacadeTokens

        oauth = FacadeTokens(
            oauth,
            resource,
            facade_keys,
            upstream_issuer=settings.oauth.issuer,
            required_scopes=settings.oauth.scopes,
            tenant_claim=settings.oauth.tenant_claim,
            blocking=blocking,
        )
    return KeyOrToken(api_keys, oauth) if "api_key" in settings.auth_modes else oauth


@dataclass(frozen=True)
class Facade:
    app: LazyFacade
    keys: SigningKeys


def build_governor(
    settings: Settings, catalog: Catalog, store: SessionStore, dynamodb: DynamoDBClient, blocking: Blocking
) -> Governor | None:
    """Rate limits and quotas (``MCP_RATE_LIMITS``, ``MCP_QUOTAS``); None when neither is set:
    then nothing of governance is imported and no request makes an AWS call for it."""
    if not settings.rate_limits and not settings.quotas:
        return None
    from mcp_platform.adapters.dynamodb.rate_counters import DynamoRateCounters, DynamoUsageTotals
    from mcp_platform.application.governance.admission import Governor
    from mcp_platform.application.governance.rules import (
        RuleError,
        parse_quotas,
        parse_rate_limits,
        require_enforceable,
    )

    try:
        rate_rules = parse_rate_limits(settings.rate_limits, name=EnvVars.RATE_LIMITS)
        quota_rules = parse_quotas(settings.quotas, name=EnvVars.QUOTAS)
        facade = settings.oauth is not None and settings.oauth.facade is not None
        require_enforceable(rate_rules, facade=facade, name=EnvVars.RATE_LIMITS)
    except RuleError as exc:
        raise ConfigError(str(exc)) from exc
    unknown = [str(rule) for rule in rate_rules if rule.tool is not None and catalog.tools.get(rule.tool) is None]
    if unknown:
        raise ConfigError(f"{EnvVars.RATE_LIMITS}: {', '.join(unknown)} names no tool this server serves")
    if rate_rules and not settings.limits_table:
        raise ConfigError(f"{EnvVars.LIMITS_TABLE} is required when {EnvVars.RATE_LIMITS} is set")
    return Governor(
        rate_rules=rate_rules,
        quota_rules=quota_rules,
        # The counters' conditions are decided by DynamoDB itself: the plain client, never DAX.
        counters=DynamoRateCounters(dynamodb, settings.limits_table) if rate_rules else None,
        usage=DynamoUsageTotals(store.gateway, settings.session_table) if quota_rules else None,
        clock=store.clock,
        blocking=blocking,
    )


def build_facade(
    settings: Settings,
    resource: ProtectedResource | None,
    store: SessionStore,
    secretsmanager: SecretsManagerClient,
    blocking: Blocking,
    governor: Governor | None = None,
    metrics: MetricsWriter | None = None,
) -> Facade | None:
    """The OAuth authorization-server facade (``MCP_OAUTH_FACADE``): its keys now (the endpoint
    verifies its tokens), everything else on the first request to one of its paths."""
    facade_settings = settings.oauth.facade if settings.oauth is not None else None
    if facade_settings is None or resource is None:
        return None
    # Optional feature: only a stack with the facade loads it.
    from mcp_platform.adapters.secrets import SecretsManagerText
    from mcp_platform.application.interactive.keys import SecretKeyRing
    from mcp_platform.authorization_server import LazyFacade
    from mcp_platform.authorization_server.signing import SigningKeys

    secret = SecretsManagerText(secretsmanager, facade_settings.keys_secret)
    keys = SigningKeys(SecretKeyRing(secret, label="OAuth facade key secret"))
    issuer = settings.oauth.issuer if settings.oauth is not None else ""
    tenant_claim = settings.oauth.tenant_claim if settings.oauth is not None else ""

    def build() -> FacadeApp:
        # On the first request to a facade path, not at start: most requests never reach it.
        from mcp_platform.adapters.document_fetcher import PinnedFetcher
        from mcp_platform.adapters.dynamodb.facade_store import FacadeStore
        from mcp_platform.adapters.jwks import urllib_fetch
        from mcp_platform.adapters.upstream_idp import UpstreamClient
        from mcp_platform.authorization_server.documents import ClientDocuments
        from mcp_platform.authorization_server.service import AuthorizationServer
        from mcp_platform.transport.facade.server import FacadeApp

        # Served on loopback (make dev, tests): client metadata documents may live there too.
        local = resource.scheme == "http"
        upstream = UpstreamClient(
            issuer,
            secret_id=facade_settings.upstream_client_secret,
            secrets_client=secretsmanager,
            scopes=facade_settings.upstream_scopes,
            fetch=urllib_fetch(),
        )
        server = AuthorizationServer(
            FacadeStore(settings.session_table, store.gateway, store.clock),
            ClientDocuments(PinnedFetcher(allow_loopback=local), allow_loopback=local),
            upstream,
            keys,
            facade_settings,
            store.clock,
            machines=settings.oauth is not None and settings.oauth.client_credentials,
            tenant_claim=tenant_claim,
        )
        return FacadeApp(
            server,
            resource,
            body_timeout_seconds=settings.body_timeout_seconds,
            blocking=blocking,
            governor=governor if governor is not None and governor.limits_facade else None,
            metrics=metrics,
        )

    return Facade(LazyFacade(build), keys)


def build_app(
    settings: Settings,
    tools_package: ModuleType,
    *more_tools: ModuleType,
    dynamodb: DynamoDBClient | None = None,
    kinesis: KinesisClient | None = None,
    sqs: SQSClient | None = None,
    bind_host: str = "127.0.0.1",
    port: int | None = None,
    metrics_stream: LineSink | None = None,
    secretsmanager: SecretsManagerClient | None = None,
    dax: DynamoDBClient | None = None,
    blocking: Blocking | None = None,
    environ: Mapping[str, str] = os.environ,
) -> McpEndpoint:
    """The endpoint serving ``tools_package`` and ``more_tools``; ``blocking`` overrides how
    blocking AWS calls run (default: :func:`~mcp_platform.bootstrap.runtime.blocking_strategy`)."""
    metrics = MetricsWriter(settings.metrics_namespace, settings.service_name, metrics_stream)
    runtime = build_runtime(
        settings,
        tools_package,
        *more_tools,
        dynamodb=dynamodb,
        kinesis=kinesis,
        sqs=sqs,
        secretsmanager=secretsmanager,
        dax=dax,
        blocking=blocking,
        environ=environ,
        metrics=metrics,
    )
    catalog, services, runner, producer = runtime.catalog, runtime.services, runtime.runner, runtime.producer
    machines = settings.oauth is not None and settings.oauth.client_credentials
    extensions: dict[str, dict[str, Any]] = {CLIENT_CREDENTIALS_EXTENSION: {}} if machines else {}
    server = McpServer(catalog, runner, instructions=INSTRUCTIONS, services=services, extensions=extensions)
    allowed_hosts = settings.allowed_hosts
    if not allowed_hosts and settings.auth_mode == "none" and port is not None:
        # An unauthenticated local server is what DNS rebinding targets: loopback Hosts only.
        # (Inside Lambda the Host is the Function URL's, so no default applies there.)
        allowed_hosts = loopback_hosts(port)
    # 2025 cancellations posted to another instance meet the call through the session table.
    flags = CancelFlags(settings.session_table, runtime.store.gateway, clock=runtime.store.clock)
    cancellation = CallCancellation(flags, poll_seconds=settings.cancel_poll_seconds, blocking=runtime.blocking)
    streamer = ResponseStreamer(
        metrics,
        _settle_then_flush(runner, producer, shared=runtime.blocking is not INLINE),
        keepalive_seconds=settings.keepalive_seconds,
        max_stream_seconds=settings.stream_max_seconds,
        cancellation=cancellation,
        spans=build_spans(settings, environ),  # None unless OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
        blocking=runtime.blocking,
    )
    resource = build_protected_resource(settings, catalog)
    governor = build_governor(settings, catalog, runtime.store, runtime.dynamodb, runtime.blocking)
    facade = build_facade(
        settings, resource, runtime.store, runtime.secretsmanager, runtime.blocking, governor, metrics=metrics
    )
    authenticator = build_authenticator(
        settings,
        runtime.dynamodb,
        bind_host=bind_host,
        resource=resource,
        facade_keys=facade.keys if facade else None,
        blocking=runtime.blocking,
    )
    return McpEndpoint(
        server,
        authenticator,
        RequestGuard(allowed_hosts, settings.allowed_origins),
        streamer,
        max_request_bytes=settings.max_request_bytes,
        body_timeout_seconds=settings.body_timeout_seconds,
        transport_sessions=TransportSessions(runtime.store, blocking=runtime.blocking),
        cancellation=cancellation,
        protected_resource=resource,
        listener=build_streams(settings, services.notifications, server) if services.notifications else None,
        facade=facade.app if facade else None,
        # Always a shared flush in a worker thread: the shutdown's time bound must hold.
        shutdown_flush=_settle_then_flush(runner, producer, shared=True),
        blocking=runtime.blocking,
        governor=governor,
        policies=build_policies(settings, catalog, tools_package),
        origin_verifier=build_origin_verifier(settings, runtime.secretsmanager),
    )


def build_origin_verifier(settings: Settings, secretsmanager: Any) -> OriginVerifier | None:
    """edge=cloudfront (``MCP_ORIGIN_VERIFY_SECRET_ARN``): the check of the distribution's header;
    None otherwise, and then nothing of it is imported. The secret is read on the first request."""
    if not settings.origin_verify_secret:
        return None
    from mcp_platform.adapters.secrets import SecretsManagerText
    from mcp_platform.transport.origin_verify import OriginVerifier

    return OriginVerifier(SecretsManagerText(secretsmanager, settings.origin_verify_secret))


def build_streams(settings: Settings, notifications: Notifications, server: McpServer) -> NotificationStreams:
    """The GET and subscriptions/listen streams, notifying about what the server advertises."""
    # Optional feature (stack option ``subscriptions``): loaded only when it is on.
    from mcp_platform.adapters.dynamodb.subscriptions import LiveSessions
    from mcp_platform.transport.listen import NotificationStreams, Served
    from mcp_platform.transport.stream_pump import StreamPump

    active = {feature.capability_key for feature in server.features}
    lists = frozenset({"tools"} | active & {"prompts", "resources"})
    resources = next((f for f in server.features if isinstance(f, ResourcesFeature)), None)
    served = Served(lists, resources.readable if resources is not None else None)
    pump = StreamPump(
        keepalive_seconds=settings.keepalive_seconds,
        max_stream_seconds=settings.stream_max_seconds,
        poll_max_seconds=settings.notify_poll_max_seconds,
        blocking=notifications.blocking,
    )
    live = LiveSessions(server.services.store)
    return NotificationStreams(notifications, live, served, server.server_info, pump)


def _settle_then_flush(runner: ToolCallRunner, producer: EventProducer | None, *, shared: bool) -> Flush:
    """What every response runs before its last byte, and the lifespan runs on shutdown.

    Commits shielded from a cancellation are awaited first, even without a stream to publish
    to: behind the Web Adapter a write still in flight after the last byte may never finish.
    An empty buffer costs no flush. ``shared``: concurrent requests join one flush in a worker
    thread (group commit); unshared, the flush runs on the loop, as every blocking call does where
    one request runs at a time (Lambda: the blocking strategy is ``INLINE``)."""

    async def run() -> None:
        try:
            if runner.committing:
                await runner.settle()
        finally:
            if producer is not None and len(producer):
                try:
                    if shared:
                        await producer.flush_async()
                    else:
                        producer.flush()
                except Exception:
                    # The answer has already been sent; records the DLQ refused stay buffered in
                    # the producer and go out with the next flush (or the shutdown flush).
                    # Logged with its trace, not hidden.
                    logger.exception("tool-event flush failed; records kept for the next flush")

    return run
