"""Starts the local platform (or, with --attach, a second endpoint) and stops it in order."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from local.bootstrap import LOOPBACK, LocalOptions, port_is_free
from local.emulator import Attributes, Clients, Emulator, describe, provision, wait_until_reachable
from local.endpoint import EndpointServer
from local.endpoint_log import EndpointLog, clear
from local.environment import endpoint_environment, function_environment
from local.fixtures import fixture_packages
from local.functions import handler_factory, invoker, resolve_handler
from local.health import HealthReporter, PipelineBacklog, RequestCounter
from local.mapping import EventSourceMapping, MappingConfig
from local.oauth_facade import prepare as prepare_oauth_facade
from local.ops import resolved_environment, save_environment
from local.pollers import KinesisShards, ShardSource, StreamPoller, TableStreamShards
from local.queue_poller import QueuePoller
from local.reload import FeatureReloader, ReloadableHandler, SwappableApp, load_features, stamps_of
from local.resources import MappingSpec, ResourcePlan, plan_from_template
from local.template import release_jsii_runtime, synthesize
from local.ttl import TtlDeletions, TtlSweeper
from mcp_platform.ops.lambda_records import SourceKind

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from mcp_platform.bootstrap.worker import TaskHandler
    from mcp_platform.config import Settings
    from mcp_platform.protocol.catalog import Catalog
    from mcp_platform.transport.endpoint import McpEndpoint

if TYPE_CHECKING:
    from local.oauth_issuer import LocalIssuer

logger = logging.getLogger(__name__)
DEV_PRINCIPAL = "local-developer"
STOP_BUDGET_S = 4.0  # Ctrl-C / SIGTERM to exit, under load too
LOCAL_QUEUE_ENVIRONMENTS = 4  # concurrent task-worker environments (Lambda scales them out)
ENDPOINT_STOP_S = 2.0  # in-flight requests finish and buffered events flush (uvicorn's lifespan)


@dataclass
class Running:
    options: LocalOptions
    plan: ResourcePlan
    attributes: Attributes
    api_key: str | None
    auth_mode: str
    synth_seconds: float
    startup_seconds: float = 0.0
    handlers: dict[str, str] = field(default_factory=dict)  # mapping logical id -> handler that runs
    emulator: Emulator | None = None
    endpoint: EndpointServer | None = None
    pollers: list[StreamPoller] = field(default_factory=list)
    sweepers: list[TtlSweeper] = field(default_factory=list)
    queue_pollers: list[QueuePoller] = field(default_factory=list)
    health: HealthReporter | None = None
    reloader: FeatureReloader | None = None
    stop_event: threading.Event = field(default_factory=threading.Event)
    oauth_issuer: LocalIssuer | None = None  # MCP_OAUTH_FACADE: the development issuer upstream of it
    environment: dict[str, str] = field(default_factory=dict)  # the endpoint's, as it was started
    endpoint_log: EndpointLog | None = None  # its lines as deployed, and the compact call lines
    saved_environment: Path | None = None  # the operations environment, while this emulator runs
    disabled_mappings: list[str] = field(default_factory=list)  # logical ids not polled (LOCAL_DISABLED_MAPPINGS)

    def shutdown(self) -> None:
        """Endpoint first (no new work), then the pollers and sweepers, then the emulator they
        talk to; within STOP_BUDGET_S in all, however busy (workers still running then are
        daemon threads: they end with the process, and the emulator is in memory only)."""
        deadline = time.monotonic() + STOP_BUDGET_S
        self.stop_event.set()
        if self.endpoint is not None:
            self.endpoint.stop(timeout_s=ENDPOINT_STOP_S)
        if self.endpoint_log is not None:
            self.endpoint_log.close()
        if self.oauth_issuer is not None:
            self.oauth_issuer.stop()
        workers: list[StreamPoller | TtlSweeper | HealthReporter | QueuePoller | FeatureReloader]
        workers = [*self.pollers, *self.sweepers]
        workers += self.queue_pollers
        workers += [self.health] if self.health is not None else []
        workers += [self.reloader] if self.reloader is not None else []
        for worker in workers:
            worker.join(timeout=max(0.1, deadline - time.monotonic()))
        if self.emulator is not None:
            self.emulator.stop()
        if self.saved_environment is not None:
            self.saved_environment.unlink(missing_ok=True)  # names an emulator that is gone

    def report_health(self) -> None:
        if self.health is not None:
            self.health.request()


def start(options: LocalOptions, running_hook: Any = None) -> Running:
    """Everything up and serving; ``running_hook(running)`` is called as soon as there is
    something to stop, so an interrupted start-up still cleans up."""
    started = time.monotonic()
    _check_ports(options)
    emulator = None
    if not options.attach:
        emulator = Emulator(options.aws_port, options.region, item_ttl_s=options.dax_item_ttl_s)
        emulator.start()
    try:
        synthesized = synthesize()
        release_jsii_runtime()  # the long-running platform never needs CDK again
        plan = plan_from_template(synthesized.template, synthesized.stage)
        clients = Clients.connect(options.aws_endpoint, options.region)
        wait_until_reachable(clients, timeout_s=30 if emulator else 3)
        if emulator is not None:
            provision(plan, clients)
        attributes = describe(plan, clients, options.region)
    except BaseException:
        if emulator is not None:
            emulator.stop()
        raise
    env = endpoint_environment(plan.endpoint, attributes, options)
    running = Running(options, plan, attributes, None, env.get("MCP_AUTH", "api_key"), synthesized.seconds)
    running.emulator = emulator
    if running_hook is not None:
        running_hook(running)
    running.oauth_issuer = prepare_oauth_facade(env, options, clients.secretsmanager)  # MCP_OAUTH_FACADE only
    running.environment = env
    from mcp_platform.bootstrap.policies import policies_dir
    from mcp_platform.config import Settings

    policies = policies_dir(Settings.from_mapping(env), options.features_dir)  # read by each build
    features_stamps = stamps_of(options.features_dir, policies)  # before the import: what changes after it reloads
    features = load_features(options.features_dir)
    # X6: one item cache for every instance on this emulator, attached ones included, as one DAX
    # cluster serves every function: the emulator serves it (local/dax_cluster.py).
    dax = _dax_client(env, options)
    task_workers: list[TaskWorkerEnvironments] = []
    if not options.attach:
        deletions = _ttl_deletions(plan, options)
        queues = {queue.logical_id for queue in plan.queues}
        for spec in plan.mappings:
            if options.mapping_disabled(plan.function(spec.function_logical_id).name):
                logger.warning("%s: not polled (LOCAL_DISABLED_MAPPINGS)", spec.logical_id)
                running.disabled_mappings.append(spec.logical_id)
                continue
            if spec.source_logical_id in queues:
                environments = _task_worker(spec, plan, attributes, options, running, features, dax)
                running.queue_pollers += _queue_pollers(spec, attributes, clients, options, running, environments)
                task_workers.append(environments)
            else:
                running.pollers.append(_poller(spec, plan, attributes, clients, options, running, deletions))
        running.sweepers = _ttl_sweepers(plan, clients, options, deletions, running.stop_event)
        workers: list[StreamPoller | TtlSweeper | QueuePoller] = [*running.pollers, *running.sweepers]
        for worker in [*workers, *running.queue_pollers]:
            worker.start()
    from mcp_platform.config import Settings

    settings = Settings.from_mapping(env)
    if not options.attach:
        clear(options.run_dir)  # a fresh emulator: no trace the old lines name exists in it
        # What `python -m local.trace` and `python -m local.ops` read instead of synthesizing again.
        operations = resolved_environment(synthesized.template, attributes, options)
        running.saved_environment = save_environment(options, operations)
    running.endpoint_log = EndpointLog(options.endpoint_log, settings.service_name)
    build_endpoint = _endpoint_builder(env, options, dax, running.endpoint_log)
    app = SwappableApp(build_endpoint(features))  # a reload swaps in a new one
    running.endpoint, running.api_key, counter = _endpoint(app, settings, options, clients)
    if options.reload_s > 0:
        rebuild = _rebuilder(build_endpoint, app, task_workers)
        running.reloader = FeatureReloader(
            options.features_dir,
            rebuild,
            served=features_stamps,
            interval_s=options.reload_s,
            stop=running.stop_event,
            policies=policies,
        )
        running.reloader.start()
    backlog = PipelineBacklog(emulator, running.pollers, options.stream_retention_s) if emulator else None
    running.health = HealthReporter([counter], backlog, options.health_s, running.stop_event)
    running.health.start()
    running.startup_seconds = time.monotonic() - started
    return running


def _check_ports(options: LocalOptions) -> None:
    if not port_is_free(options.mcp_port):
        raise SystemExit(f"MCP_PORT {options.mcp_port} is in use on {LOOPBACK}: choose another with MCP_PORT=...")
    if not options.attach and not port_is_free(options.aws_port):
        raise SystemExit(
            f"LOCAL_AWS_PORT {options.aws_port} is in use on {LOOPBACK}: is `make dev` already running? "
            "Attach a second endpoint with `make dev-second`, or choose another port with LOCAL_AWS_PORT=..."
        )


def _endpoint(
    app: SwappableApp, settings: Settings, options: LocalOptions, clients: Clients
) -> tuple[EndpointServer, str | None, RequestCounter]:
    from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore

    api_key = None
    if "api_key" in settings.auth_modes:
        store = ApiKeyStore(settings.session_table, clients.dynamodb)
        api_key = store.mint(DEV_PRINCIPAL, label="local platform", key=options.api_key or None)
    counter = RequestCounter(app)  # for the health line: requests served
    server = EndpointServer(counter, options.mcp_port)
    server.start()
    return server, api_key, counter


def _endpoint_builder(
    environ: Mapping[str, str], options: LocalOptions, dax: DynamoDBClient, log: EndpointLog
) -> Callable[[ModuleType], McpEndpoint]:
    """Builds the endpoint's app for the given features, at start-up and on each reload, from
    the function's environment ``environ`` as the template gives it; its EMF lines go to ``log``
    (the file as deployed, a compact line per call on the console)."""
    from mcp_platform.config import Settings

    settings = Settings.from_mapping(environ)
    aws_clients = _warm_clients(settings, dax)
    fixtures = fixture_packages(options.fixtures)

    def build(features: ModuleType) -> McpEndpoint:
        """The same composition root the Lambda's endpoint_app.py calls, with its default clients."""
        from mcp_platform.bootstrap.endpoint import build_app

        return build_app(
            settings,
            features,
            *fixtures,
            bind_host=LOOPBACK,
            port=options.mcp_port,
            metrics_stream=log,
            environ=environ,
            **aws_clients,
        )

    return build


def _warm_clients(settings: Settings, dax: DynamoDBClient | None = None) -> dict[str, Any]:
    """The AWS clients the composition root builds by default (each built on first use), made
    once and handed to every build: a reload reuses their connections instead of leaving a new
    set of clients, sockets included, to the garbage collector each time."""
    from mcp_platform.adapters.aws_clients import LazyClient

    clients: dict[str, Any] = {
        service: LazyClient(service, settings) for service in ("dynamodb", "kinesis", "sqs", "secretsmanager")
    }
    if dax is not None:
        clients["dax"] = dax
    return clients


def _dax_client(env: dict[str, str], options: LocalOptions) -> DynamoDBClient:
    """A DynamoDB client of the emulator's DAX cluster (its one item cache), built on first use."""
    from dataclasses import replace

    from local.dax_cluster import endpoint_url
    from mcp_platform.adapters.aws_clients import lazy_client
    from mcp_platform.config import Settings

    return lazy_client(
        "dynamodb", replace(Settings.from_mapping(env), aws_endpoint_url=endpoint_url(options.aws_endpoint))
    )


def _rebuilder(
    build_endpoint: Callable[[ModuleType], McpEndpoint], app: SwappableApp, task_workers: list[TaskWorkerEnvironments]
) -> Callable[[ModuleType], Catalog]:
    """What a reload runs on the freshly imported features: everything is built before anything
    is swapped, so a package that fails to build leaves the endpoint and the workers as they were."""

    def rebuild(features: ModuleType) -> Catalog:
        endpoint_app = build_endpoint(features)
        built: list[list[TaskHandler]] = []
        try:
            for environments in task_workers:
                built.append(environments.build(features))
            app.replace(endpoint_app)
        except BaseException:
            for handler in (handler for handlers in built for handler in handlers):
                handler.close()
            raise
        for environments, handlers in zip(task_workers, built, strict=True):
            environments.replace(handlers)
        return endpoint_app.server.catalog

    return rebuild


def _poller(
    spec: MappingSpec,
    plan: ResourcePlan,
    attributes: Attributes,
    clients: Clients,
    options: LocalOptions,
    running: Running,
    ttl_deletions: dict[str, TtlDeletions],
) -> StreamPoller:
    function = plan.function(spec.function_logical_id)
    handler = resolve_handler(function, function_environment(function, attributes, options))
    running.handlers[spec.logical_id] = function.handler
    source, config = stream_mapping(spec, plan, attributes, clients, options.region, ttl_deletions)
    invoke = invoker(handler, function, config.function_arn)
    mapping = EventSourceMapping(config, invoke, _dlq(spec, attributes, clients))
    return StreamPoller(function.name, source, mapping, running.stop_event)


def stream_mapping(
    spec: MappingSpec,
    plan: ResourcePlan,
    attributes: Attributes,
    clients: Clients,
    region: str,
    ttl_deletions: Mapping[str, TtlDeletions] | None = None,
) -> tuple[ShardSource, MappingConfig]:
    """What a stream mapping of the template reads (its consumer's stream, a stream read directly, or
    its table's stream)
    and the rules it delivers by, whatever runs its function (this process, or a process started
    as Lambda starts it: tests/integration/functions)."""
    function = plan.function(spec.function_logical_id)
    source_id = spec.source_logical_id
    source: ShardSource
    consumer = next((c for c in plan.consumers if c.logical_id == source_id), None)
    read_directly = next((s for s in plan.streams if s.logical_id == source_id), None)  # ingest_fan_out=false
    if consumer is not None:
        stream = next(s for s in plan.streams if s.logical_id == consumer.stream_logical_id)
        consumer_arn = attributes[source_id]["ConsumerARN"]
        source = KinesisShards(clients.kinesis, stream.name, consumer_arn, region)
        stream_arn = attributes[stream.logical_id]["Arn"]
    elif read_directly is not None:
        # Shared throughput: records carry the stream's ARN, as Lambda delivers them.
        stream_arn = attributes[source_id]["Arn"]
        source = KinesisShards(clients.kinesis, read_directly.name, stream_arn, region)
    else:
        stream_arn = attributes[source_id]["StreamArn"]
        source = TableStreamShards(clients.streams, stream_arn, (ttl_deletions or {}).get(source_id))
    config = MappingConfig(
        kind=SourceKind.KINESIS if consumer is not None or read_directly is not None else SourceKind.DYNAMODB,
        function_arn=attributes[function.logical_id]["Arn"],
        stream_arn=stream_arn,
        batch_size=spec.batch_size,
        max_retries=spec.max_retries,
        bisect_on_error=spec.bisect_on_error,
        report_batch_item_failures=spec.report_batch_item_failures,
        max_record_age_s=spec.max_record_age_s,
    )
    return source, config


@dataclass(frozen=True)
class TaskWorkerEnvironments:
    """The task worker's LOCAL_QUEUE_ENVIRONMENTS concurrent environments on its queue, each with
    its own handler (its own warm state) and its own AWS clients, serving the endpoint's features
    and fixture packs (a task runs the tool its endpoint listed); a reload builds new handlers
    with the same clients and swaps them in."""

    handler_factory: Callable[[ModuleType], Callable[..., TaskHandler]]  # features -> handler builder
    handlers: tuple[ReloadableHandler, ...]
    clients: tuple[dict[str, Any], ...]  # per environment, kept across reloads

    def build(self, features: ModuleType) -> list[TaskHandler]:
        new_handler = self.handler_factory(features)
        built: list[TaskHandler] = []
        try:
            for clients in self.clients:
                built.append(new_handler(**clients))
        except BaseException:
            for handler in built:
                handler.close()
            raise
        return built

    def replace(self, built: list[TaskHandler]) -> None:
        for handler, new in zip(self.handlers, built, strict=True):
            handler.replace(new)


def _task_worker(
    spec: MappingSpec,
    plan: ResourcePlan,
    attributes: Attributes,
    options: LocalOptions,
    running: Running,
    features: ModuleType,
    dax: DynamoDBClient,
) -> TaskWorkerEnvironments:
    from mcp_platform.config import Settings

    function = plan.function(spec.function_logical_id)
    env = function_environment(function, attributes, options)
    fixtures = fixture_packages(options.fixtures)

    def factory(served: ModuleType) -> Callable[..., TaskHandler]:
        return handler_factory(function, env, served, *fixtures)

    running.handlers[spec.logical_id] = function.handler
    clients = tuple(_warm_clients(Settings.from_mapping(env), dax) for _ in range(LOCAL_QUEUE_ENVIRONMENTS))
    new_handler = factory(features)
    handlers = tuple(ReloadableHandler(new_handler(**own)) for own in clients)
    return TaskWorkerEnvironments(factory, handlers, clients)


def _queue_pollers(
    spec: MappingSpec,
    attributes: Attributes,
    clients: Clients,
    options: LocalOptions,
    running: Running,
    environments: TaskWorkerEnvironments,
) -> list[QueuePoller]:
    """One poller per task-worker environment, as Lambda's concurrent executions on a queue."""
    function = running.plan.function(spec.function_logical_id)
    queue = attributes[spec.source_logical_id]
    function_arn = attributes[function.logical_id]["Arn"]
    return [
        QueuePoller(
            f"{function.name}-{index}",
            clients.sqs,
            queue["Ref"],
            queue["Arn"],
            invoker(handler, function, function_arn),
            batch_size=spec.batch_size,
            region=options.region,
            stop=running.stop_event,
        )
        for index, handler in enumerate(environments.handlers)
    ]


def _ttl_deletions(plan: ResourcePlan, options: LocalOptions) -> dict[str, TtlDeletions]:
    """Per table logical id: where TTL is enabled and a stream mapping reads the table's stream.

    Those are the tables whose TTL deletes the platform acts on (the session table, A4). The
    audit table's TTL only bounds retention (365 days by default), which a local run does not
    reach: scanning it every few seconds would only load the emulator, which serves one request
    at a time.
    """
    if options.ttl_sweep_s <= 0:
        return {}
    streamed = {spec.source_logical_id for spec in plan.mappings}
    return {t.logical_id: TtlDeletions() for t in plan.tables if t.ttl_attribute and t.logical_id in streamed}


def _ttl_sweepers(
    plan: ResourcePlan,
    clients: Clients,
    options: LocalOptions,
    deletions: dict[str, TtlDeletions],
    stop: threading.Event,
) -> list[TtlSweeper]:
    sweepers = []
    for table in plan.tables:
        if table.logical_id in deletions and table.ttl_attribute:
            keys = tuple(key["AttributeName"] for key in table.key_schema)
            sweeper = TtlSweeper(
                clients.dynamodb,
                table.name,
                table.ttl_attribute,
                keys,
                deletions[table.logical_id],
                interval_s=options.ttl_sweep_s,
                stop=stop,
            )
            sweepers.append(sweeper)
    return sweepers


def _dlq(spec: MappingSpec, attributes: Attributes, clients: Clients) -> Any:
    queue_id = spec.on_failure_logical_id
    if queue_id is None:

        def discard(message: dict[str, Any]) -> None:
            logger.error("%s has no on-failure destination: records dropped: %s", spec.logical_id, message)

        return discard
    queue_url = attributes[queue_id]["Ref"]

    def send(message: dict[str, Any]) -> None:
        clients.sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(message))

    return send
