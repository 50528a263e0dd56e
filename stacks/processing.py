"""Processing: ingest (Kinesis EFO consumer, K5, or the shards directly) and audit (table stream, A1-A5) functions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from mcp_platform.config import EnvVars
from stacks.common import APPLICATION_LOG_LEVEL, function_telemetry, log_group
from stacks.config import PlatformConfig
from stacks.data import Data
from stacks.deployment import live_alias
from stacks.runtime import architecture_of, lambda_runtime
from stacks.stream import EventStream

ROOT = Path(__file__).resolve().parent.parent
# A1: after this age a record goes to the DLQ instead of being retried; well inside the
# stream retentions (24 h for DynamoDB Streams, >= 24 h for Kinesis), so the DLQ's pointer
# still lets an operator replay the record from the stream.
MAX_RECORD_AGE = Duration.hours(6)
RETRY_ATTEMPTS = 3
BATCH_SIZE = 100
MEMORY_MB = 512  # ingest and audit (make bench prices ingest's work per event at it)


class Processing(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: PlatformConfig,
        layer: lambda_.ILayerVersion,
        data: Data,
        stream: EventStream,
        ingest_dlq: sqs.IQueue,
        audit_dlq: sqs.IQueue,
        expiry_dlq: sqs.IQueue,
    ) -> None:
        super().__init__(scope, construct_id)
        # Each function gets the variables its code reads, and a grant on every resource one names.
        base_env = {
            EnvVars.STAGE: config.stage,
            EnvVars.SESSION_TABLE: data.session_table.table_name,
            EnvVars.METRICS_NAMESPACE: "McpPlatform",
            EnvVars.LOG_LEVEL: APPLICATION_LOG_LEVEL,
        }

        self.ingest = self._function(
            "Ingest",
            handler="ingest_handler.lambda_handler",
            config=config,
            layer=layer,
            environment={
                **base_env,
                EnvVars.SERVICE_NAME: "mcp-ingest",
                # K7: the dedupe markers must outlive every record a replay can still deliver.
                EnvVars.EVENT_RETENTION_HOURS: str(config.retention_hours),
                # G2 (optional): the periods whose usage totals ingest keeps for the quotas.
                **({EnvVars.QUOTAS: config.quotas} if config.quotas is not None else {}),
            },
        )
        data.session_table.grant_read_write_data(self.ingest)  # idempotent records, usage counters
        # K5: the mapping reads through the registered EFO consumer (its ARN is the source); with
        # ingest_fan_out=false it polls the stream's shards (shared throughput: up to a second more
        # latency, no consumer-shard hours). Either way the same records reach the same handler.
        # Every mapping invokes its function's live alias, which CodeDeploy shifts between versions.
        self.ingest_alias = live_alias(self.ingest)
        self.ingest_alias.add_event_source(
            sources.KinesisConsumerEventSource(stream.consumer, **_a1_mapping(ingest_dlq))
            if stream.consumer is not None
            else sources.KinesisEventSource(stream.stream, **_a1_mapping(ingest_dlq))
        )

        self.audit = self._function(
            "Audit",
            handler="audit_handler.lambda_handler",
            config=config,
            layer=layer,
            environment={
                **base_env,
                EnvVars.SERVICE_NAME: "mcp-audit",
                EnvVars.AUDIT_TABLE: data.audit_table.table_name,
                EnvVars.EVENT_STREAM: stream.stream.stream_name,  # A4: the session.expired event
                EnvVars.EXPIRY_EVENTS_DLQ_URL: expiry_dlq.queue_url,
                EnvVars.AUDIT_RETENTION_DAYS: str(config.audit_retention_days),
                EnvVars.COMPATIBLE_WITH: config.compatible_with,  # which layout its items take
            },
        )
        # A2: conditional puts keyed by SequenceNumber; a duplicate reads the original back.
        data.audit_table.grant_read_write_data(self.audit)
        # A4: TTL-expiry side effects (revoke, session summary, event) touch the session table
        # and emit to the stream; what cannot be done goes to the expiry-events DLQ.
        data.session_table.grant_read_write_data(self.audit)
        stream.stream.grant_write(self.audit)
        expiry_dlq.grant_send_messages(self.audit)
        # A1 (and A5: a poison record is reported, bisected, then sent to the DLQ).
        self.audit_alias = live_alias(self.audit)
        self.audit_alias.add_event_source(sources.DynamoEventSource(data.session_table, **_a1_mapping(audit_dlq)))

    def _function(
        self,
        construct_id: str,
        *,
        handler: str,
        config: PlatformConfig,
        layer: lambda_.ILayerVersion,
        environment: dict[str, str],
    ) -> lambda_.Function:
        folder = construct_id.lower()  # functions/ingest, functions/audit
        return lambda_.Function(
            self,
            construct_id,
            runtime=lambda_runtime(config),
            architecture=architecture_of(config),
            handler=handler,
            code=lambda_.Code.from_asset(str(ROOT / "functions" / folder), exclude=["**/__pycache__", "**/*.pyc"]),
            layers=[layer],
            memory_size=MEMORY_MB,
            timeout=Duration.seconds(60),
            environment=environment,
            log_group=log_group(self, f"{construct_id}Logs", config),
            **function_telemetry(config),  # JSON logs, Lambda's own lines and X-Ray per context
            description=f"mcp-platform {folder} processor",
        )


def _a1_mapping(dlq: sqs.IQueue) -> dict[str, Any]:
    """A1 for every stream mapping: TRIM_HORIZON, bisect on error, bounded retries and record
    age, partial batch responses, and an on-failure DLQ (A5: a poison record ends there). One
    batch per shard at a time, in order: ingest counts a batch through its shard's checkpoint,
    which concurrent batches of one shard would race."""
    return {
        "starting_position": lambda_.StartingPosition.TRIM_HORIZON,
        "batch_size": BATCH_SIZE,
        "parallelization_factor": 1,
        "bisect_batch_on_error": True,
        "retry_attempts": RETRY_ATTEMPTS,
        "max_record_age": MAX_RECORD_AGE,
        "report_batch_item_failures": True,
        "on_failure": sources.SqsDlq(dlq),
    }
