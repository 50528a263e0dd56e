"""Starts the local platform (or, with --attach, a second endpoint) and stops it in order."""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from local.bootstrap import LOOPBACK, LocalOptions, port_is_free
from local.emulator import Attributes, Clients, Emulator, describe, provision, wait_until_reachable
from local.endpoint import EndpointServer
from local.environment import endpoint_environment, function_environment
from local.fixtures import fixture_packages
from local.functions import handler_factory, invoker, resolve_handler
from local.health import HealthReporter, PipelineBacklog, RequestCounter
from local.mapping import EventSourceMapping, MappingConfig
from local.oauth_facade import prepare as prepare_oauth_facade
from local.pollers import KinesisShards, ShardSource, StreamPoller, TableStreamShards
from local.queue_poller import QueuePoller
from local.records import SourceKind
from local.resources import MappingSpec, ResourcePlan, plan_from_template
from local.template import release_jsii_runtime, synthesize
from local.ttl import TtlDeletions, TtlSweeper

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
    stop_event: threading.Event = field(default_factory=threading.Event)
    oauth_issuer: LocalIssuer | None = None  # MCP_OAUTH_FACADE: the development issuer upstream of it
    environment: dict[str, str] = field(default_factory=dict)  # the endpoint's, as it was started

    def shutdown(self) -> None:
        """Endpoint first (no new work), then the pollers and sweepers, then the emulator they
        talk to; within STOP_BUDGET_S in all, however busy (workers still running then are
        daemon threads: they end with the process, and the emulator is in memory only)."""
        deadline = time.monotonic() + STOP_BUDGET_S
        self.stop_event.set()
        if self.endpoint is not None:
            self.endpoint.stop(timeout_s=ENDPOINT_STOP_S)
        if self.oauth_issuer is not None:
            self.oauth_issuer.stop()
        workers: list[StreamPoller | TtlSweeper | HealthReporter | QueuePoller] = [*self.pollers, *self.sweepers]
        workers += self.queue_pollers
        workers += [self.health] if self.health is not None else []
        for worker in workers:
            worker.join(timeout=max(0.1, deadline - time.monotonic()))
        if self.emulator is not None:
            self.emulator.stop()

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
        emulator = Emulator(options.aws_port, options.region)
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
    if not options.attach:
        deletions = _ttl_deletions(plan, options)
        queues = {queue.logical_id for queue in plan.queues}
        for spec in plan.mappings:
            if spec.source_logical_id in queues:
                running.queue_pollers += _queue_pollers(spec, plan, attributes, clients, options, running)
            else:
                running.pollers.append(_poller(spec, plan, attributes, clients, options, running, deletions))
        running.sweepers = _ttl_sweepers(plan, clients, options, deletions, running.stop_event)
        workers: list[StreamPoller | TtlSweeper | QueuePoller] = [*running.pollers, *running.sweepers]
        for worker in [*workers, *running.queue_pollers]:
            worker.start()
    running.endpoint, running.api_key, counter = _endpoint(env, options, clients)
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
    env: dict[str, str], options: LocalOptions, clients: Clients
) -> tuple[EndpointServer, str | None, RequestCounter]:
    import mcp_tools
    from mcp_platform.auth.api_keys import ApiKeyStore
    from mcp_platform.config import Settings
    from mcp_platform.http.app import build_app

    settings = Settings.from_mapping(env)
    # The same composition root the Lambda's endpoint_app.py calls; default clients, as there.
    app = build_app(settings, mcp_tools, *fixture_packages(options.fixtures), bind_host=LOOPBACK, port=options.mcp_port)
    api_key = None
    if "api_key" in settings.auth_modes:
        store = ApiKeyStore(settings.session_table, clients.dynamodb)
        api_key = store.mint(DEV_PRINCIPAL, label="local platform", key=options.api_key or None)
    counter = RequestCounter(app)  # for the health line: requests served
    server = EndpointServer(counter, options.mcp_port)
    server.start()
    return server, api_key, counter


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
    source_id = spec.source_logical_id
    source: ShardSource
    consumer = next((c for c in plan.consumers if c.logical_id == source_id), None)
    if consumer is not None:
        stream = next(s for s in plan.streams if s.logical_id == consumer.stream_logical_id)
        consumer_arn = attributes[source_id]["ConsumerARN"]
        source = KinesisShards(clients.kinesis, stream.name, consumer_arn, options.region)
        stream_arn = attributes[stream.logical_id]["Arn"]
    else:
        stream_arn = attributes[source_id]["StreamArn"]
        source = TableStreamShards(clients.streams, stream_arn, ttl_deletions.get(source_id))
    config = MappingConfig(
        kind=SourceKind.KINESIS if consumer is not None else SourceKind.DYNAMODB,
        function_arn=attributes[function.logical_id]["Arn"],
        stream_arn=stream_arn,
        batch_size=spec.batch_size,
        max_retries=spec.max_retries,
        bisect_on_error=spec.bisect_on_error,
        report_batch_item_failures=spec.report_batch_item_failures,
        max_record_age_s=spec.max_record_age_s,
    )
    invoke = invoker(handler, function, config.function_arn)
    mapping = EventSourceMapping(config, invoke, _dlq(spec, attributes, clients))
    return StreamPoller(function.name, source, mapping, running.stop_event)


def _queue_pollers(
    spec: MappingSpec,
    plan: ResourcePlan,
    attributes: Attributes,
    clients: Clients,
    options: LocalOptions,
    running: Running,
) -> list[QueuePoller]:
    """The task worker: LOCAL_QUEUE_ENVIRONMENTS concurrent environments on its queue, serving
    the endpoint's tools and fixture packs (a task runs the tool its endpoint listed)."""
    import mcp_tools

    function = plan.function(spec.function_logical_id)
    new_handler = handler_factory(
        function, function_environment(function, attributes, options), mcp_tools, *fixture_packages(options.fixtures)
    )
    running.handlers[spec.logical_id] = function.handler
    queue = attributes[spec.source_logical_id]
    function_arn = attributes[function.logical_id]["Arn"]
    return [
        QueuePoller(
            f"{function.name}-{index}",
            clients.sqs,
            queue["Ref"],
            queue["Arn"],
            invoker(new_handler(), function, function_arn),
            batch_size=spec.batch_size,
            region=options.region,
            stop=running.stop_event,
        )
        for index in range(LOCAL_QUEUE_ENVIRONMENTS)
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
