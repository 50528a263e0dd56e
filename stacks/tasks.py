"""Tasks: the task worker function, its queue and DLQ (tasks extension, durable long calls).

Why SQS and not asynchronous invocation: a queue keeps every task message durably until a
worker has handled it (async invocation keeps an event at most 6 hours and retries it at most
twice), its visibility timeout redelivers the message of a worker that crashed or timed out,
its maxReceiveCount bounds the attempts and then dead-letters the message, partial batch
responses retry one task without the others, and reserved concurrency caps how many tasks run
at once without losing the ones waiting. The worker records a task failed after
``task_max_attempts`` attempts itself; the DLQ (two receives later) keeps what it could not
handle at all (a malformed message, the table unreachable), and any message there is an alarm.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from mcp_platform.config import EnvVars
from stacks.app_resources import CODE_EXCLUDES
from stacks.common import dead_letter_queue, function_telemetry, log_group
from stacks.config import PlatformConfig
from stacks.data import Data
from stacks.dax import DaxCache
from stacks.deployment import live_alias
from stacks.endpoint import IGNORE_STAGE_IN_PATH, ROOT, Endpoint
from stacks.network import Network
from stacks.runtime import architecture_of, lambda_runtime
from stacks.stream import EventStream

WORKER_TIMEOUT_S = 900  # one attempt of a task: the Lambda maximum
# Longer than one attempt, so a message is never redelivered while its worker still runs it.
VISIBILITY_TIMEOUT_S = WORKER_TIMEOUT_S + 60
# The Web Adapter's settings, and the request-state secret: a task asks for input through its task
# item (tasks/update), never through a 2026 requestState, so the worker neither reads nor is
# granted the secret. Nor the OAuth facade's: only the endpoint serves it (and reads its secrets).
# Nor the origin-verify secret: the worker is fed by its queue, never by the edge.
_NOT_FOR_THE_WORKER = (
    "AWS_LAMBDA_EXEC_WRAPPER",
    "AWS_LWA_",
    IGNORE_STAGE_IN_PATH,
    EnvVars.ORIGIN_VERIFY_SECRET,
    EnvVars.REQUEST_STATE_SECRET,
    EnvVars.OAUTH_FACADE,  # the facade is served by the endpoint (and its variables with it)
    "MCP_OAUTH_UPSTREAM_",
    # Rate limits and quotas are checked at admission, by the endpoint: a task was admitted there.
    EnvVars.RATE_LIMITS,
    EnvVars.QUOTAS,
    EnvVars.LIMITS_TABLE,
)


class TaskWorker(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: PlatformConfig,
        key: kms.IKey,
        layer: lambda_.ILayerVersion,
        data: Data,
        stream: EventStream,
        endpoint: Endpoint,
        producer_dlq: sqs.IQueue,
        network: Network | None,
        dax: DaxCache | None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dlq = dead_letter_queue(self, "Dlq", key, config)
        self.queue = sqs.Queue(
            self,
            "Queue",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=key,
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(VISIBILITY_TIMEOUT_S),
            retention_period=Duration.days(4),
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=config.task_max_attempts + 2, queue=self.dlq),
        )
        # The endpoint's environment (same tools, same store and stream), without the Web Adapter's.
        environment = {k: v for k, v in endpoint.environment.items() if not k.startswith(_NOT_FOR_THE_WORKER)}
        environment.update(
            {
                EnvVars.SERVICE_NAME: "mcp-task-worker",
                EnvVars.TASK_QUEUE_URL: self.queue.queue_url,
                EnvVars.TASK_MAX_ATTEMPTS: str(config.task_max_attempts),
            }
        )
        vpc_props = network.function_placement() if network is not None else {}
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=lambda_runtime(config),
            architecture=architecture_of(config),
            handler="task_worker.lambda_handler",
            # The endpoint's own code asset: a task runs exactly the tool the endpoint listed.
            code=lambda_.Code.from_asset(str(ROOT / "functions" / "endpoint"), exclude=CODE_EXCLUDES),
            layers=[layer],
            memory_size=1024,
            timeout=Duration.seconds(WORKER_TIMEOUT_S),
            environment=environment,
            reserved_concurrent_executions=config.task_worker_concurrency,
            log_group=log_group(self, "Logs", config),
            **function_telemetry(config),  # JSON logs, Lambda's own lines and X-Ray per context
            description="MCP task worker (tasks extension): runs queued tool calls",
            **vpc_props,  # type: ignore[arg-type]
        )
        fn = self.function
        # One task per invocation: each attempt has the whole timeout, and one slow task never
        # delays another (Lambda scales out per message).
        # The trigger invokes the live alias, which CodeDeploy shifts between versions.
        self.alias = live_alias(fn)
        self.alias.add_event_source(sources.SqsEventSource(self.queue, batch_size=1, report_batch_item_failures=True))
        data.session_table.grant_read_write_data(fn)  # task items, the session tool's commit
        data.audit_table.grant_read_data(fn)  # tools that read audit trails
        stream.stream.grant_write(fn)
        stream.stream.grant_read(fn)
        producer_dlq.grant_send_messages(fn)
        if dax is not None:
            dax.grant_client(fn)
        # The endpoint creates tasks: it sends to the queue, nothing else.
        endpoint.function.add_environment(EnvVars.TASK_QUEUE_URL, self.queue.queue_url)
        endpoint.function.add_environment(EnvVars.TASK_MAX_ATTEMPTS, str(config.task_max_attempts))
        self.queue.grant_send_messages(endpoint.function)
