"""Monitoring: the platform's alarms (K8, A5, S4, DLQs), the topic they notify, and one dashboard.

Every alarm notifies one encrypted SNS topic when it fires and when it clears. The optional
``alarm_email`` context key subscribes an address; chat (AWS Chatbot / Amazon Q Developer in chat
applications), a pager (PagerDuty's or Opsgenie's HTTPS endpoints) or a Lambda subscribe to the
same topic, whose ARN is a stack output.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from mcp_platform.application.metrics import (
    EVENTS_DEAD_LETTERED,
    GOVERNANCE_REFUSALS,
    METHOD,
    OPERATION_DURATION,
    OPERATION_ERRORS,
    SERVICE,
    STORE_CONFLICTS,
    STORE_THROTTLES,
    TIME_TO_FIRST_BYTE,
    TOOL,
)
from stacks.config import PlatformConfig
from stacks.stream import EventStream

PERIOD = Duration.minutes(1)
ITERATOR_AGE_ALARM_MS = 60_000  # a consumer a minute behind is falling behind, not jittering
TTFB_LIMIT_MS = 5_000  # S4: first byte always within 5 s
ERROR_RATE_LIMIT = 0.05  # more than 5% of the endpoint's requests failing, for 5 minutes
P99_LIMIT_S = 30.0  # a p99 past 30 s over 5 minutes: calls are slow, not a few long tools
TOP_TOOLS = 10


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
    def __init__(
        self, scope: Construct, construct_id: str, *, config: PlatformConfig, key: kms.IKey, watched: Monitored
    ) -> None:
        super().__init__(scope, construct_id)
        self.alarms: list[cw.Alarm] = []
        self.topic = sns.Topic(
            self, "AlarmTopic", display_name=f"mcp-platform {config.stage} alarms", master_key=key, enforce_ssl=True
        )
        # CloudWatch publishes to the encrypted topic with the platform key: it needs to use it.
        key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*")
        if config.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
        CfnOutput(Stack.of(self), "AlarmTopicArn", value=self.topic.topic_arn, description="alarm notifications")
        self._action = cw_actions.SnsAction(self.topic)
        stream = watched.stream.stream

        # K8: the EFO consumer's lag (MillisBehindLatest) and the ingest mapping's IteratorAge
        # (without a consumer, ingest_fan_out=false, the mapping's IteratorAge is the lag).
        consumer = watched.stream.consumer
        lags: list[cw.IMetric] = []
        if consumer is not None:
            efo_lag = cw.Metric(
                namespace="AWS/Kinesis",
                metric_name="SubscribeToShardEvent.MillisBehindLatest",
                dimensions_map={"StreamName": stream.stream_name, "ConsumerName": consumer.stream_consumer_name},
                statistic="Maximum",
                period=PERIOD,
            )
            self._alarm("KinesisConsumerLag", efo_lag, ITERATOR_AGE_ALARM_MS, "EFO consumer is behind the stream tip")
            lags.append(efo_lag)
        ingest_age = watched.ingest.metric("IteratorAge", statistic="Maximum", period=PERIOD)
        self._alarm("IngestIteratorAge", ingest_age, ITERATOR_AGE_ALARM_MS, "ingest is behind the stream")
        write_throttles = stream.metric_write_provisioned_throughput_exceeded(statistic="Sum", period=PERIOD)
        self._alarm("KinesisWriteThrottled", write_throttles, 0, "PutRecords throttled (hot shard or capacity)")
        # DynamoDB-stream lag, seen as the audit mapping's IteratorAge.
        audit_age = watched.audit.metric("IteratorAge", statistic="Maximum", period=PERIOD)
        self._alarm("AuditIteratorAge", audit_age, ITERATOR_AGE_ALARM_MS, "audit is behind the table stream")

        # Nothing is dropped silently: any message in any DLQ is an alarm.
        self.dlq_alarms: list[cw.Alarm] = []  # each also rolls a deployment back (stacks/deployment.py)
        for name, queue in watched.dlqs.items():
            visible = queue.metric_approximate_number_of_messages_visible(statistic="Maximum", period=PERIOD)
            self.dlq_alarms.append(
                self._alarm(f"{name}DlqNotEmpty", visible, 0, f"messages waiting in the {name} dead-letter queue")
            )

        functions = {"Endpoint": watched.endpoint, "Ingest": watched.ingest, "Audit": watched.audit}
        if watched.task_worker is not None:
            functions["TaskWorker"] = watched.task_worker
        self.error_alarms: dict[str, cw.Alarm] = {}  # by function: what rolls back its own deployment
        for name, fn in functions.items():
            errors = fn.metric_errors(statistic="Sum", period=PERIOD)
            self.error_alarms[name] = self._alarm(f"{name}Errors", errors, 0, f"{name} errors")
            self._alarm(f"{name}Throttles", fn.metric_throttles(statistic="Sum", period=PERIOD), 0, f"{name} throttled")

        # S4: the endpoint's own time to first byte (milliseconds, EMF).
        ttfb = cw.Metric(
            namespace=watched.metrics_namespace,
            metric_name=TIME_TO_FIRST_BYTE,
            dimensions_map={SERVICE: watched.service_name},
            statistic="Maximum",
            unit=cw.Unit.MILLISECONDS,
            period=PERIOD,
        )
        self._alarm("EndpointTtfb", ttfb, TTFB_LIMIT_MS, "time to first byte over 5 s (S4)")

        # The OpenTelemetry MCP metrics the endpoint writes per request: error rate and p99 overall,
        # and per tool on the dashboard (SEARCH finds every tool that was called).
        operations = {SERVICE: watched.service_name}
        window = Duration.minutes(5)
        error_rate = cw.Metric(
            namespace=watched.metrics_namespace,
            metric_name=OPERATION_ERRORS,
            dimensions_map=operations,
            statistic="Average",
            period=window,
        )
        error_rate_alarm = self._alarm(
            "EndpointErrorRate", error_rate, ERROR_RATE_LIMIT, "over 5% of MCP requests failed (5 min)"
        )
        p99 = cw.Metric(
            namespace=watched.metrics_namespace,
            metric_name=OPERATION_DURATION,
            dimensions_map=operations,
            statistic="p99",
            period=window,
        )
        p99_alarm = self._alarm("EndpointP99", p99, P99_LIMIT_S, "p99 of MCP request duration over 30 s (5 min)")
        self.endpoint_alarms = [error_rate_alarm, p99_alarm]  # the callers' view: rolls every deployment back
        schema = f"{{{watched.metrics_namespace},{SERVICE},{METHOD},{TOOL}}}"

        def top_tools(metric: str, statistic: str) -> cw.MathExpression:
            """The busiest tools' ``metric``: SEARCH finds every tool that was called."""
            search = (
                f"SEARCH('{schema} {SERVICE}=\"{watched.service_name}\" MetricName=\"{metric}\"', '{statistic}', 60)"
            )
            return cw.MathExpression(expression=f"SORT({search}, SUM, DESC, {TOP_TOOLS})", label="", period=PERIOD)

        def per_service(metric: str, label: str) -> cw.MathExpression:
            """A counter's sum per minute for each function writing it (the endpoint, the task
            worker): SEARCH finds every service; a minute without any has no data."""
            search = f"SEARCH('{{{watched.metrics_namespace},{SERVICE}}} MetricName=\"{metric}\"', 'Sum', 60)"
            # A dynamic label: each series names its service.
            return cw.MathExpression(expression=search, label=f"{label} ${{PROP('Dim.{SERVICE}')}}", period=PERIOD)

        self.dashboard = cw.Dashboard(self, "Dashboard", dashboard_name=f"mcp-platform-{config.stage}")
        self.dashboard.add_widgets(
            cw.GraphWidget(title="Tools: calls per minute", left=[top_tools(OPERATION_DURATION, "SampleCount")]),
            cw.GraphWidget(title="Tools: errors per minute", left=[top_tools(OPERATION_ERRORS, "Sum")]),
            cw.GraphWidget(title="Tools: p50 duration (s)", left=[top_tools(OPERATION_DURATION, "p50")]),
            cw.GraphWidget(title="Tools: p99 duration (s)", left=[top_tools(OPERATION_DURATION, "p99")]),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(title="Endpoint: error rate", left=[error_rate]),
            cw.GraphWidget(title="Endpoint: request duration p50 / p99 (s)", left=[p99.with_(statistic="p50"), p99]),
        )
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
            cw.GraphWidget(title="Lag (ms)", left=[*lags, ingest_age, audit_age]),
            cw.GraphWidget(title="Kinesis write throttling", left=[write_throttles]),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title="Session store: conflicts / throttles per minute",
                left=[per_service(STORE_CONFLICTS, "conflicts")],
                right=[per_service(STORE_THROTTLES, "throttles")],
            ),
            cw.GraphWidget(
                title="Tool-call events dead-lettered per minute",
                left=[per_service(EVENTS_DEAD_LETTERED, "dead-lettered")],
            ),
            cw.GraphWidget(
                title="Refused by rate limits and quotas per minute",
                left=[per_service(GOVERNANCE_REFUSALS, "refused")],
            ),
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
        alarm.add_alarm_action(self._action)
        alarm.add_ok_action(self._action)
        self.alarms.append(alarm)
        return alarm
