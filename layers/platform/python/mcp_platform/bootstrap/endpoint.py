"""Composition root of the endpoint: settings + clients in, ASGI app out.

Built once per process (module scope of the endpoint function) and reused by every warm
request. Clients may be injected (tests, the local platform); defaults are built otherwise.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TextIO

from mcp_platform.adapters.aws_clients import LazyClient
from mcp_platform.adapters.dynamodb.api_keys import ApiKeyAuthenticator, ApiKeyStore
from mcp_platform.adapters.dynamodb.cancellation import CancelFlags
from mcp_platform.application.auth.base import CLIENT_CREDENTIALS_EXTENSION, Authenticator
from mcp_platform.application.auth.loopback import LoopbackAuthenticator
from mcp_platform.application.metrics import MetricsWriter
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.config import ConfigError, Settings
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.context import Services
from mcp_platform.protocol.server import McpServer
from mcp_platform.transport.endpoint import McpEndpoint
from mcp_platform.transport.security import RequestGuard, loopback_hosts
from mcp_platform.transport.streaming import Flush, ResponseStreamer

if TYPE_CHECKING:
    from mcp_platform.adapters.dynamodb.sessions import SessionStore
    from mcp_platform.adapters.kinesis.producer import EventProducer
    from mcp_platform.application.auth.facade import LazyFacade
    from mcp_platform.application.auth.facade.signing import SigningKeys
    from mcp_platform.application.auth.resource import ProtectedResource
    from mcp_platform.application.interactive import InteractiveServices
    from mcp_platform.application.notifications import Notifications
    from mcp_platform.application.tasks.service import TaskService
    from mcp_platform.transport.listen import NotificationStreams

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Serverless MCP platform. Call open_session to get a session handle, then pass it as the "
    "'session' argument of session tools (append_note, read_notes, session_info, ...)."
)


def build_protected_resource(settings: Settings, catalog: Catalog) -> ProtectedResource | None:
    """OAuth mode only; the metadata's ``scopes_supported`` includes every tool's scopes."""
    if settings.oauth is None:
        return None
    from mcp_platform.application.auth.resource import ProtectedResource

    specs = (catalog.tools.get(name) for name in catalog.tools.names())
    tool_scopes = [scope for spec in specs if spec is not None for scope in spec.scopes]
    return ProtectedResource.from_settings(settings.oauth, settings.region, tool_scopes)


def build_authenticator(
    settings: Settings,
    dynamodb: Any,
    *,
    bind_host: str,
    resource: ProtectedResource | None = None,
    facade_keys: SigningKeys | None = None,
) -> Authenticator:
    if settings.auth_mode == "none":
        if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
            # Behind the Web Adapter every request arrives from loopback: refuse outright.
            raise ConfigError("MCP_AUTH=none is refused inside Lambda")
        if bind_host not in ("127.0.0.1", "localhost", "::1"):
            raise ConfigError("MCP_AUTH=none is accepted only on a loopback bind address")
        return LoopbackAuthenticator()
    api_keys = ApiKeyAuthenticator(ApiKeyStore(settings.session_table, dynamodb))
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
        from mcp_platform.application.auth.facade.tokens import FacadeTokens

        oauth = FacadeTokens(
            oauth, resource, facade_keys, upstream_issuer=settings.oauth.issuer, required_scopes=settings.oauth.scopes
        )
    return KeyOrToken(api_keys, oauth) if "api_key" in settings.auth_modes else oauth


@dataclass(frozen=True)
class Facade:
    app: LazyFacade
    keys: SigningKeys


def build_facade(
    settings: Settings, resource: ProtectedResource | None, store: SessionStore, secretsmanager: Any
) -> Facade | None:
    """The OAuth authorization-server facade (``MCP_OAUTH_FACADE``): its keys now (the endpoint
    verifies its tokens), everything else on the first request to one of its paths."""
    facade_settings = settings.oauth.facade if settings.oauth is not None else None
    if facade_settings is None or resource is None:
        return None
    from mcp_platform.application.auth.facade import LazyFacade
    from mcp_platform.application.auth.facade.signing import SigningKeys
    from mcp_platform.application.interactive.keys import SecretKeyRing

    keys = SigningKeys(SecretKeyRing(secretsmanager, facade_settings.keys_secret, label="OAuth facade key secret"))
    issuer = settings.oauth.issuer if settings.oauth is not None else ""

    def build() -> Any:
        from mcp_platform.adapters.dynamodb.facade_store import FacadeStore
        from mcp_platform.adapters.jwks import urllib_fetch
        from mcp_platform.adapters.upstream_idp import UpstreamClient
        from mcp_platform.application.auth.facade.documents import ClientDocuments, PinnedFetcher
        from mcp_platform.application.auth.facade.service import AuthorizationServer
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
        )
        return FacadeApp(server, resource, body_timeout_seconds=settings.body_timeout_seconds)

    return Facade(LazyFacade(build), keys)


@dataclass
class Runtime:
    """What the endpoint and the task worker share: the catalog, the services, the runner."""

    catalog: Catalog
    services: Services
    runner: ToolCallRunner
    producer: EventProducer | None
    store: SessionStore
    dynamodb: Any


def build_runtime(
    settings: Settings,
    *packages: ModuleType,
    dynamodb: Any | None = None,
    kinesis: Any | None = None,
    sqs: Any | None = None,
    extra_services: dict[str, Any] | None = None,
    secretsmanager: Any | None = None,
    max_call_seconds: float | None = None,
    dax: Any | None = None,
) -> Runtime:
    from mcp_platform.adapters.dynamodb.aws_errors import is_throttle
    from mcp_platform.adapters.dynamodb.sessions import SessionStore
    from mcp_platform.adapters.kinesis.producer import EventProducer
    from mcp_platform.adapters.sqs.dead_letters import DeadLetterQueue

    # Built on the first request that reads or writes the table (a session, an API key, a task):
    # a stateless call never loads DynamoDB's service model (~40% of the process's start).
    dynamodb = dynamodb or LazyClient("dynamodb", settings)
    # ``dax``: an item cache to read and write items through (the local DAX stand-in); without
    # it the DAX client is built when settings name a cluster (X3, X5).
    store = SessionStore.from_settings(settings, dynamodb=dynamodb, dax=dax)
    sqs = sqs or LazyClient("sqs", settings)
    producer = event_reader = None
    if settings.event_stream:
        from mcp_platform.adapters.kinesis.shard_reader import ShardReader

        kinesis = kinesis or LazyClient("kinesis", settings)
        producer = EventProducer(
            kinesis,
            settings.event_stream,
            DeadLetterQueue(sqs, settings.producer_dlq_url),
            stream_arn=settings.event_stream_arn,
        )
        event_reader = ShardReader(kinesis, settings.event_stream)
    audit_trail = None
    if settings.audit_table:
        from mcp_platform.application.audit.trail import AuditTrail

        audit_trail = AuditTrail(dynamodb, settings.audit_table)
    catalog = Catalog.discover(*packages)
    notifications = build_notifications(settings, store, catalog) if settings.subscriptions else None
    services = Services(
        sessions=store,
        audit_trail=audit_trail,
        event_reader=event_reader,
        extra=dict(extra_services or {}),
        notifications=notifications,
        interactive=build_interactive(settings, store, secretsmanager),
        tasks=build_tasks(settings, store, sqs) if settings.task_queue_url else None,
    )
    # Every call, streamed or plain JSON, is bounded by the stream cap (a tool may declare less).
    limit = max_call_seconds if max_call_seconds is not None else settings.stream_max_seconds
    runner = ToolCallRunner(services, producer, max_call_seconds=limit, is_throttle=is_throttle)
    return Runtime(catalog, services, runner, producer, store, dynamodb)


def build_app(
    settings: Settings,
    tools_package: ModuleType,
    *more_tools: ModuleType,
    dynamodb: Any | None = None,
    kinesis: Any | None = None,
    sqs: Any | None = None,
    bind_host: str = "127.0.0.1",
    port: int | None = None,
    extra_services: dict[str, Any] | None = None,
    metrics_stream: TextIO | None = None,
    secretsmanager: Any | None = None,
    dax: Any | None = None,
) -> McpEndpoint:
    runtime = build_runtime(
        settings,
        tools_package,
        *more_tools,
        dynamodb=dynamodb,
        kinesis=kinesis,
        sqs=sqs,
        extra_services=extra_services,
        secretsmanager=secretsmanager,
        dax=dax,
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
    metrics = MetricsWriter(settings.metrics_namespace, settings.service_name, metrics_stream)
    # 2025 cancellations posted to another instance meet the call through the session table.
    cancel_flags = CancelFlags(settings.session_table, runtime.store.gateway, clock=runtime.store.clock)
    streamer = ResponseStreamer(
        metrics,
        _settle_then_flush(runner, producer),
        keepalive_seconds=settings.keepalive_seconds,
        max_stream_seconds=settings.stream_max_seconds,
        cancel_flags=cancel_flags,
        cancel_poll_seconds=settings.cancel_poll_seconds,
    )
    resource = build_protected_resource(settings, catalog)
    facade = build_facade(settings, resource, runtime.store, secretsmanager or LazyClient("secretsmanager", settings))
    authenticator = build_authenticator(
        settings, runtime.dynamodb, bind_host=bind_host, resource=resource, facade_keys=facade.keys if facade else None
    )
    return McpEndpoint(
        server,
        authenticator,
        RequestGuard(allowed_hosts, settings.allowed_origins),
        streamer,
        max_request_bytes=settings.max_request_bytes,
        body_timeout_seconds=settings.body_timeout_seconds,
        cancel_flags=cancel_flags,
        protected_resource=resource,
        listener=build_streams(settings, services.notifications, server) if services.notifications else None,
        facade=facade.app if facade else None,
    )


def build_tasks(settings: Settings, store: SessionStore, sqs: Any) -> TaskService:
    """Tasks extension (the stack deploys the task worker and its queue): its items live in the
    session table, through the store's gateway (retries, throttling typed as elsewhere)."""
    from mcp_platform.adapters.dynamodb.tasks import TaskStore
    from mcp_platform.application.tasks.service import TaskService

    tasks = TaskStore(settings.session_table, store.gateway, clock=store.clock)
    return TaskService(tasks, sqs, settings.task_queue_url, ttl_seconds=settings.task_ttl_seconds)


def build_interactive(settings: Settings, store: SessionStore, secretsmanager: Any | None) -> InteractiveServices:
    """Elicitation, sampling and roots for tools: nothing of it loads, and the request-state secret
    is not read, until a request asks (the Secrets Manager client is built on first use too)."""
    from mcp_platform.application.interactive import InteractiveServices

    return InteractiveServices(
        settings.session_table,
        store.gateway,
        store.clock,
        secret_id=settings.request_state_secret,
        secrets_client=secretsmanager or LazyClient("secretsmanager", settings),
        client_request_timeout_seconds=settings.client_request_timeout_seconds,
    )


def build_notifications(settings: Settings, store: SessionStore, catalog: Catalog) -> Notifications:
    """Stack option ``subscriptions``: the log and the subscription set, in the session table;
    a resource's updates reach every subscriber or only the announcing principal's, by its
    declared cache scope. Imported only when on: with it off nothing of it loads (cold start)."""
    from functools import partial

    from mcp_platform.application.notifications import NotificationLog, Notifications, SessionSubscriptions
    from mcp_platform.application.subscriptions import audience

    table, gateway = settings.session_table, store.gateway
    return Notifications(
        NotificationLog(table, gateway, clock=store.clock),
        SessionSubscriptions(table, gateway, clock=store.clock),
        partial(audience, catalog),
    )


def build_streams(settings: Settings, notifications: Notifications, server: McpServer) -> NotificationStreams:
    """The GET and subscriptions/listen streams, notifying about what the server advertises."""
    from mcp_platform.protocol.features import ResourcesFeature
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
    )
    return NotificationStreams(notifications, server.services.sessions, served, server.server_info, pump)


def _settle_then_flush(runner: ToolCallRunner, producer: EventProducer | None) -> Flush:
    """What every response runs before its last byte, and the lifespan runs on shutdown.

    Commits shielded from a cancellation are awaited first, even without a stream to publish
    to: behind the Web Adapter a write still in flight after the last byte may never finish.
    An empty buffer costs no flush."""

    async def run() -> None:
        try:
            if runner.committing:
                await runner.settle()
        finally:
            if producer is not None and len(producer):
                try:
                    await producer.flush_async()
                except Exception:
                    # The answer has already been sent; records the DLQ refused stay buffered in
                    # the producer and go out with the next flush (or the shutdown flush).
                    # Logged with its trace, not hidden.
                    logger.exception("tool-event flush failed; records kept for the next flush")

    return run
