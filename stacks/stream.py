"""Stream: the tool-call event stream (K5-K9)."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_kms as kms
from aws_cdk import custom_resources as cr
from constructs import Construct

from stacks.common import log_group
from stacks.config import PlatformConfig

# K8: shard-level metrics, so a hot shard is visible instead of averaged away.
SHARD_LEVEL_METRICS = [
    "IncomingBytes",
    "IncomingRecords",
    "WriteProvisionedThroughputExceeded",
    "ReadProvisionedThroughputExceeded",
    "IteratorAgeMilliseconds",
]
INGEST_CONSUMER_NAME = "ingest"


class EventStream(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: PlatformConfig, key: kms.IKey) -> None:
        super().__init__(scope, construct_id)
        provisioned = config.stream_mode == "PROVISIONED"
        self.stream = kinesis.Stream(
            self,
            "Stream",
            # K6: ON_DEMAND, or PROVISIONED with the explicit or computed shard count.
            stream_mode=kinesis.StreamMode.PROVISIONED if provisioned else kinesis.StreamMode.ON_DEMAND,
            shard_count=config.shard_count if provisioned else None,
            retention_period=Duration.hours(config.retention_hours),  # K7
            encryption=kinesis.StreamEncryption.KMS,  # K9
            encryption_key=key,
        )
        # K5: a dedicated enhanced fan-out pipe (2 MB/s per shard, pushed) for the ingest function;
        # with ingest_fan_out=false (profile minimal) none: ingest polls the shards itself.
        self.consumer: kinesis.StreamConsumer | None = (
            kinesis.StreamConsumer(
                self, "IngestConsumer", stream=self.stream, stream_consumer_name=INGEST_CONSUMER_NAME
            )
            if config.ingest_fan_out
            else None
        )
        # K8: shard-level metrics show a hot shard; a one-shard stream's stream-level metrics (free)
        # are its shard's already, so it does without them (each is a CloudWatch custom metric).
        self.shard_level_metrics = not (provisioned and config.shard_count == 1)
        if self.shard_level_metrics:
            self._enable_shard_level_metrics(config)

    def _enable_shard_level_metrics(self, config: PlatformConfig) -> None:
        """K8: CloudFormation has no property for shard-level monitoring; call the API instead."""
        stream_name = self.stream.stream_name
        call = {
            "service": "Kinesis",
            "parameters": {"StreamName": stream_name, "ShardLevelMetrics": SHARD_LEVEL_METRICS},
            "physical_resource_id": cr.PhysicalResourceId.of(f"{stream_name}-enhanced-monitoring"),
        }
        self.enhanced_monitoring = cr.AwsCustomResource(
            self,
            "EnhancedMonitoring",
            on_create=cr.AwsSdkCall(action="enableEnhancedMonitoring", **call),  # type: ignore[arg-type]
            on_update=cr.AwsSdkCall(action="enableEnhancedMonitoring", **call),  # type: ignore[arg-type]
            on_delete=cr.AwsSdkCall(action="disableEnhancedMonitoring", **call),  # type: ignore[arg-type]
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [
                    iam.PolicyStatement(
                        actions=["kinesis:EnableEnhancedMonitoring", "kinesis:DisableEnhancedMonitoring"],
                        resources=[self.stream.stream_arn],
                    )
                ]
            ),
            install_latest_aws_sdk=False,  # the runtime's SDK has these calls; no download at deploy
            log_group=log_group(self, "EnhancedMonitoringLogs", config),
            timeout=Duration.minutes(2),
        )

    @property
    def region(self) -> str:
        return Stack.of(self).region
