"""Monitoring: the platform's alarms (K8, A5, S4, DLQs) and one dashboard."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from stacks.config import PlatformConfig
from stacks.stream import EventStream

PERIOD = Duration.minutes(1)
ITERATOR_AGE_ALARM_MS = 60_000  # a consumer a minute behind is falling behind, not jittering
TTFB_LIMIT_MS = 5_000  # S4: first byte always within 5 s


@dataclass(frozen=True)
class Monitored:
    """What the monitoring construct watches."""

    stream: EventStream
    endpoint: lambda_.Function
    ingest: lambda_.Function
    audit: lambda_.Function
    dlqs: dict[str, sqs.IQueue]
    service_name: str
    metrics_namespace: str
    task_worker: lambda_.Function | None = None


class Monitoring(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: PlatformConfig, watched: Monitored) -> None:
        super().__init__(scope, construct_id)
        self.alarms: list[cw.Alarm] = []
        stream = watched.stream.stream

        # K8: the EFO consumer's lag (MillisBehindLatest) and the ingest mapping's IteratorAge.
        efo_lag = cw.Metric(
            namespace="AWS/Kinesis",
            metric_name="SubscribeToShardEvent.MillisBehindLatest",
            dimensions_map={
                "StreamName": stream.stream_name,
                "ConsumerName": watched.stream.consumer.stream_consumer_name,
            },
            statistic="Maximum",
            period=PERIOD,
        )
        self._alarm("KinesisConsumerLag", efo_lag, ITERATOR_AGE_ALARM_MS, "EFO consumer is behind the stream tip")
        ingest_age = watched.ingest.metric("IteratorAge", statistic="Maximum", period=PERIOD)
        self._alarm("IngestIteratorAge", ingest_age, ITERATOR_AGE_ALARM_MS, "ingest is behind the stream")
        write_throttles = stream.metric_write_provisioned_throughput_exceeded(statistic="Sum", period=PERIOD)
        self._alarm("KinesisWriteThrottled", write_throttles, 0, "PutRecords throttled (hot shard or capacity)")
        # DynamoDB-stream lag, seen as the audit mapping's IteratorAge.
        audit_age = watched.audit.metric("IteratorAge", statistic="Maximum", period=PERIOD)
        self._alarm("AuditIteratorAge", audit_age, ITERATOR_AGE_ALARM_MS, "audit is behind the table stream")

        # Nothing is dropped silently: any message in any DLQ is an alarm.
        for name, queue in watched.dlqs.items():
            visible = queue.metric_approximate_number_of_messages_visible(statistic="Maximum", period=PERIOD)
            self._alarm(f"{name}DlqNotEmpty", visible, 0, f"messages waiting in the {name} dead-letter queue")

        functions = {"Endpoint": watched.endpoint, "Ingest": watched.ingest, "Audit": watched.audit}
        if watched.task_worker is not None:
            functions["TaskWorker"] = watched.task_worker
        for name, fn in functions.items():
            self._alarm(f"{name}Errors", fn.metric_errors(statistic="Sum", period=PERIOD), 0, f"{name} errors")
            self._alarm(f"{name}Throttles", fn.metric_throttles(statistic="Sum", period=PERIOD), 0, f"{name} throttled")

        # S4: the endpoint's own TimeToFirstByte metric (milliseconds, Powertools EMF).
        ttfb = cw.Metric(
            namespace=watched.metrics_namespace,
            metric_name="TimeToFirstByte",
            dimensions_map={"service": watched.service_name},
            statistic="Maximum",
            unit=cw.Unit.MILLISECONDS,
            period=PERIOD,
        )
        self._alarm("EndpointTtfb", ttfb, TTFB_LIMIT_MS, "time to first byte over 5 s (S4)")

        self.dashboard = cw.Dashboard(self, "Dashboard", dashboard_name=f"mcp-platform-{config.stage}")
        self.dashboard.add_widgets(
            cw.GraphWidget(title="Endpoint TTFB (ms)", left=[ttfb, ttfb.with_(statistic="p99")]),
            cw.GraphWidget(
                title="Functions: invocations / errors / throttles",
                left=[fn.metric_invocations(period=PERIOD) for fn in functions.values()],
                right=[m for fn in functions.values() for m in (fn.metric_errors(), fn.metric_throttles())],
            ),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title="Kinesis: incoming records / bytes",
                left=[stream.metric_incoming_records(period=PERIOD)],
                right=[stream.metric_incoming_bytes(period=PERIOD)],
            ),
            cw.GraphWidget(title="Lag (ms)", left=[efo_lag, ingest_age, audit_age]),
            cw.GraphWidget(title="Kinesis write throttling", left=[write_throttles]),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title="Dead-letter queues (messages visible)",
                left=[
                    q.metric_approximate_number_of_messages_visible(label=name, period=PERIOD)
                    for name, q in watched.dlqs.items()
                ],
            ),
            cw.AlarmStatusWidget(title="Alarms", alarms=list(self.alarms), width=12),
        )

    def _alarm(self, construct_id: str, metric: cw.IMetric, threshold: float, description: str) -> cw.Alarm:
        alarm = cw.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            # No data = nothing happening (no traffic, empty queue), which is healthy.
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        self.alarms.append(alarm)
        return alarm
