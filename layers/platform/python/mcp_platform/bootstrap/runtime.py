"""What the endpoint and the task worker share: adapters built from settings, and the use cases
wired onto them (the catalog, the tool-facing services, the tool-call runner).

No transport here: the task worker builds through this module and never loads the HTTP layer.
Everything every start needs is imported at module level; an optional feature (the event stream,
the audit trail, notifications, tasks) is imported inside the function that builds it, so a stack
without it never loads it (cold start).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, overload

from mcp_platform.adapters.aws_clients import lazy_client
from mcp_platform.adapters.dynamodb.aws_errors import is_throttle
from mcp_platform.adapters.dynamodb.sessions import SessionStore
from mcp_platform.application.blocking import IN_THREAD, INLINE, Blocking
from mcp_platform.application.interactive.services import InteractiveServices
from mcp_platform.application.metrics import MetricsWriter
from mcp_platform.application.services import Services
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.config import Settings
from mcp_platform.protocol.catalog import Catalog

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient
    from mypy_boto3_secretsmanager import SecretsManagerClient
    from mypy_boto3_sqs import SQSClient

    from mcp_platform.adapters.dynamodb.audit_trail import AuditTrail
    from mcp_platform.adapters.dynamodb.replies import ClientReplies
    from mcp_platform.adapters.dynamodb.request_state_vault import RequestStateVault
    from mcp_platform.adapters.kinesis.producer import EventProducer
    from mcp_platform.adapters.kinesis.recent import KinesisRecentEvents
    from mcp_platform.application.notifications import Notifications
    from mcp_platform.application.tasks.service import TaskService


def blocking_strategy(environ: Mapping[str, str] = os.environ) -> Blocking:
    """Inside Lambda one execution environment serves one request at a time: nobody waits for
    the event loop, so blocking AWS calls run on it. Anywhere else (local servers, tests) a worker
    thread keeps the loop free for concurrent requests."""
    return INLINE if environ.get("AWS_LAMBDA_FUNCTION_NAME") else IN_THREAD


@dataclass(frozen=True)
class Runtime:
    """What the endpoint and the task worker share."""

    catalog: Catalog
    services: Services[object]
    runner: ToolCallRunner
    producer: EventProducer | None
    store: SessionStore
    dynamodb: DynamoDBClient
    """The DynamoDB client (built on first use unless injected): API keys are read through it."""
    sqs: SQSClient
    secretsmanager: SecretsManagerClient
    blocking: Blocking


def build_runtime(
    settings: Settings,
    *packages: ModuleType,
    dynamodb: DynamoDBClient | None = None,
    kinesis: KinesisClient | None = None,
    sqs: SQSClient | None = None,
    secretsmanager: SecretsManagerClient | None = None,
    max_call_seconds: float | None = None,
    dax: DynamoDBClient | None = None,
    blocking: Blocking | None = None,
    environ: Mapping[str, str] = os.environ,
    metrics: MetricsWriter | None = None,
) -> Runtime:
    """``packages``: the feature modules to serve. Clients may be injected (tests, the local
    platform); each default one is built on its first use, so a stateless call never loads
    DynamoDB's service model (~40% of the process's start). ``environ``: the function's
    environment, handed to the features package's ``build_deps``. ``metrics``: where the runner
    and the producer count store conflicts, throttles and dead-lettered events."""
    blocking = blocking or blocking_strategy()
    dynamodb = dynamodb or lazy_client("dynamodb", settings)
    sqs = sqs or lazy_client("sqs", settings)
    secretsmanager = secretsmanager or lazy_client("secretsmanager", settings)
    # ``dax``: an item cache to read and write items through (the local DAX stand-in); without
    # it the DAX client is built when settings name a cluster (X3, X5).
    store = SessionStore.from_settings(settings, dynamodb=dynamodb, dax=dax)
    catalog = Catalog.discover(*packages)
    producer, recent_events = (
        build_event_stream(settings, kinesis, sqs, metrics) if settings.event_stream else (None, None)
    )
    services: Services[object] = Services(
        store=store,
        deps=build_deps(packages, AppEnvironment(environ=environ, settings=settings)),
        audit_trail=build_audit_trail(settings, dynamodb) if settings.audit_table else None,
        recent_events=recent_events,
        notifications=build_notifications(settings, store, catalog, blocking) if settings.subscriptions else None,
        interactive=build_interactive(settings, store, secretsmanager, blocking),
        tasks=build_tasks(settings, store, sqs, blocking) if settings.task_queue_url else None,
        blocking=blocking,
    )
    # Every call, streamed or plain JSON, is bounded by the stream cap (a tool may declare less).
    limit = max_call_seconds if max_call_seconds is not None else settings.stream_max_seconds
    runner = ToolCallRunner(
        services, producer, max_call_seconds=limit, blocking=blocking, is_throttle=is_throttle, metrics=metrics
    )
    return Runtime(
        catalog=catalog,
        services=services,
        runner=runner,
        producer=producer,
        store=store,
        dynamodb=dynamodb,
        sqs=sqs,
        secretsmanager=secretsmanager,
        blocking=blocking,
    )


DEPS_HOOK = "build_deps"
"""What a features package names the function that builds its own dependencies."""


@dataclass(frozen=True)
class AppEnvironment:
    """What a features package's ``build_deps(app)`` is given: the function's environment (with
    the variables the app's CDK hook set: the names of its resources) and AWS clients built as
    the platform's own are (region, the local emulator's endpoint; each on its first use)."""

    environ: Mapping[str, str]
    settings: Settings

    @overload
    def client(self, service: Literal["dynamodb"]) -> DynamoDBClient: ...
    @overload
    def client(self, service: Literal["kinesis"]) -> KinesisClient: ...
    @overload
    def client(self, service: Literal["sqs"]) -> SQSClient: ...
    @overload
    def client(self, service: Literal["secretsmanager"]) -> SecretsManagerClient: ...
    @overload
    def client(self, service: str) -> Any: ...
    def client(self, service: str) -> object:
        """A botocore client of ``service`` (``"dynamodb"``, ``"s3"``...), built on first use: typed
        by its boto3-stubs client for the services the platform itself uses, untyped for any other
        (the platform has no stubs of an app's own services)."""
        return lazy_client(service, self.settings)


def build_deps(packages: Sequence[ModuleType], app: AppEnvironment) -> object:
    """The features package's own dependencies (``ctx.services.deps``): what its
    ``build_deps(app)`` returns, called once per process, here, for the endpoint and the task
    worker alike; None when no package defines one."""
    hooks = [getattr(package, DEPS_HOOK) for package in packages if callable(getattr(package, DEPS_HOOK, None))]
    if len(hooks) > 1:
        raise ValueError(f"more than one features package defines {DEPS_HOOK}(): only one app may")
    return hooks[0](app) if hooks else None


def build_event_stream(
    settings: Settings, kinesis: KinesisClient | None, sqs: SQSClient, metrics: MetricsWriter | None = None
) -> tuple[EventProducer, KinesisRecentEvents]:
    """Stack option ``event_stream``: the tool-call event producer (its dead letters to SQS) and
    the reader tools use to look back at recent events."""
    from mcp_platform.adapters.kinesis.producer import EventProducer
    from mcp_platform.adapters.kinesis.recent import KinesisRecentEvents
    from mcp_platform.adapters.kinesis.shard_reader import ShardReader
    from mcp_platform.adapters.sqs.dead_letters import DeadLetterQueue

    kinesis = kinesis or lazy_client("kinesis", settings)
    producer = EventProducer(
        kinesis,
        settings.event_stream,
        DeadLetterQueue(sqs, settings.producer_dlq_url),
        stream_arn=settings.event_stream_arn,
        metrics=metrics,
    )
    return producer, KinesisRecentEvents(ShardReader(kinesis, settings.event_stream))


def build_audit_trail(settings: Settings, dynamodb: DynamoDBClient) -> AuditTrail:
    """Stack option ``audit``: the read side of the audit table, for tools."""
    from mcp_platform.adapters.dynamodb.audit_trail import AuditTrail

    return AuditTrail(dynamodb, settings.audit_table)


def build_tasks(settings: Settings, store: SessionStore, sqs: SQSClient, blocking: Blocking) -> TaskService:
    """Tasks extension (the stack deploys the task worker and its queue): its items live in the
    session table, through the store's gateway (retries, throttling typed as elsewhere)."""
    from mcp_platform.adapters.dynamodb.tasks import TaskStore
    from mcp_platform.adapters.sqs.task_queue import SqsTaskQueue
    from mcp_platform.application.tasks.service import TaskService

    tasks = TaskStore(settings.session_table, store.gateway, clock=store.clock)
    queue = SqsTaskQueue(sqs, settings.task_queue_url)
    return TaskService(tasks, queue, ttl_seconds=settings.task_ttl_seconds, blocking=blocking)


def build_interactive(
    settings: Settings, store: SessionStore, secretsmanager: SecretsManagerClient, blocking: Blocking = IN_THREAD
) -> InteractiveServices:
    """Elicitation, sampling and roots for tools: each side (the 2026 request-state vault, the 2025
    reply store) is built, and the request-state secret read, only when a request asks."""

    def vault() -> RequestStateVault:
        from mcp_platform.adapters.dynamodb.request_state_vault import RequestStateVault
        from mcp_platform.adapters.secrets import SecretsManagerText
        from mcp_platform.application.interactive.keys import SecretKeyRing
        from mcp_platform.application.interactive.ports import StateKeysMissing

        if not settings.request_state_secret:
            raise StateKeysMissing("no request-state secret is configured (MCP_REQUEST_STATE_SECRET_ARN)")
        keys = SecretKeyRing(SecretsManagerText(secretsmanager, settings.request_state_secret))
        return RequestStateVault(keys, store.gateway, settings.session_table, clock=store.clock)

    def replies() -> ClientReplies:
        from mcp_platform.adapters.dynamodb.replies import ClientReplies

        return ClientReplies(settings.session_table, store.gateway, clock=store.clock)

    return InteractiveServices(
        vault=vault,
        replies=replies,
        client_request_timeout_seconds=settings.client_request_timeout_seconds,
        blocking=blocking,
    )


def build_notifications(
    settings: Settings, store: SessionStore, catalog: Catalog, blocking: Blocking = IN_THREAD
) -> Notifications:
    """Stack option ``subscriptions``: the log and the subscription set, in the session table;
    a resource's updates reach every subscriber or only the announcing principal's, by its
    declared cache scope."""
    from mcp_platform.adapters.dynamodb.notification_log import NotificationLog
    from mcp_platform.adapters.dynamodb.subscriptions import SessionSubscriptions
    from mcp_platform.application.notifications import Notifications
    from mcp_platform.application.subscriptions import audience

    table, gateway = settings.session_table, store.gateway
    return Notifications(
        NotificationLog(table, gateway, clock=store.clock),
        SessionSubscriptions(table, gateway, clock=store.clock),
        partial(audience, catalog),
        blocking,
    )
