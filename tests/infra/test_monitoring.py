"""Alarms (K8, A5, S4, DLQs, function health) and the dashboard in the template."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from mcp_platform.application.metrics import (
    EVENTS_DEAD_LETTERED,
    GOVERNANCE_REFUSALS,
    OPERATION_DURATION,
    OPERATION_ERRORS,
    PROMPT,
    STORE_CONFLICTS,
    STORE_THROTTLES,
    TIME_TO_FIRST_BYTE,
    TOOL,
    MetricsWriter,
)
from mcp_platform.config import EnvVars
from mcp_platform.ops.__main__ import OPERATIONS_OUTPUT
from mcp_platform.ops.dead_letters import QUEUE_VARIABLES
from stacks.config import ContextError
from stacks.endpoint import METRICS_NAMESPACE, SERVICE_NAME
from tests.infra.iam import referenced_logical_ids
from tests.infra.synth import Synthesized, synthesize

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def alarms(s: Synthesized) -> list[dict]:
    return [a["Properties"] for a in s.resources("AWS::CloudWatch::Alarm").values()]


def alarms_on(s: Synthesized, namespace: str, metric: str) -> list[dict]:
    return [a for a in alarms(s) if a.get("Namespace") == namespace and a.get("MetricName") == metric]


def test_every_alarm_fires_above_its_threshold_and_ignores_missing_data(variant: Synthesized) -> None:
    for alarm in alarms(variant):
        assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
        assert alarm["TreatMissingData"] == "notBreaching"


def test_k8_kinesis_consumer_lag_and_write_throttling_alarms(variant: Synthesized) -> None:
    # Then the EFO consumer's MillisBehindLatest and the stream's write throttling are alarmed
    (lag,) = alarms_on(variant, "AWS/Kinesis", "SubscribeToShardEvent.MillisBehindLatest")
    assert {d["Name"] for d in lag["Dimensions"]} == {"StreamName", "ConsumerName"}
    (throttle,) = alarms_on(variant, "AWS/Kinesis", "WriteProvisionedThroughputExceeded")
    assert throttle["Threshold"] == 0


def test_k8_a1_iterator_age_alarms_for_both_mappings(variant: Synthesized) -> None:
    # Then the ingest (Kinesis) and audit (DynamoDB stream) functions' IteratorAge are alarmed
    iterator_age = alarms_on(variant, "AWS/Lambda", "IteratorAge")
    assert len(iterator_age) == 2
    assert all(a["Threshold"] > 0 for a in iterator_age)


def test_any_message_in_any_dlq_alarms(variant: Synthesized) -> None:
    # Given every DLQ (every queue but the task worker's work queue) / Then each alarms on > 0
    queues = {k for k, v in variant.resources("AWS::SQS::Queue").items() if "RedrivePolicy" not in v["Properties"]}
    watched = {
        d["Value"]["Fn::GetAtt"][0]
        for a in alarms_on(variant, "AWS/SQS", "ApproximateNumberOfMessagesVisible")
        for d in a["Dimensions"]
        if a["Threshold"] == 0
    }
    assert watched == queues


def test_function_errors_and_throttles_alarms(variant: Synthesized) -> None:
    for metric in ("Errors", "Throttles"):
        # endpoint, ingest, audit and the task worker
        assert len(alarms_on(variant, "AWS/Lambda", metric)) == 4, metric


def test_s4_ttfb_alarm_over_five_seconds(variant: Synthesized) -> None:
    # Then the endpoint's own time-to-first-byte (ms) metric alarms above 5 s
    (ttfb,) = alarms_on(variant, METRICS_NAMESPACE, TIME_TO_FIRST_BYTE)
    assert ttfb["Threshold"] == 5000
    assert ttfb["Dimensions"] == [{"Name": "service", "Value": SERVICE_NAME}]
    assert ttfb["Statistic"] == "Maximum"


def test_one_dashboard(variant: Synthesized) -> None:
    dashboard = variant.one("AWS::CloudWatch::Dashboard")["Properties"]
    assert dashboard["DashboardName"].startswith("mcp-platform-")


def test_every_alarm_notifies_the_encrypted_alarm_topic_when_it_fires_and_clears(variant: Synthesized) -> None:
    # Given the one alarm topic, encrypted with the platform key and TLS-only
    (topic_id,) = variant.resources("AWS::SNS::Topic")
    topic = variant.json["Resources"][topic_id]["Properties"]
    assert "KmsMasterKeyId" in topic
    # Then every alarm names it as its ALARM and OK action
    assert alarms(variant)
    for alarm in alarms(variant):
        assert alarm["AlarmActions"] == [{"Ref": topic_id}], alarm["AlarmDescription"]
        assert alarm["OKActions"] == [{"Ref": topic_id}], alarm["AlarmDescription"]
    # And CloudWatch may use the key to publish to it
    key_policy = json.dumps([k["Properties"]["KeyPolicy"] for k in variant.resources("AWS::KMS::Key").values()])
    assert "cloudwatch.amazonaws.com" in key_policy


def test_alarm_email_subscribes_an_address_only_when_given(default: Synthesized, tmp_path: Path) -> None:
    # Given no alarm_email / Then the topic has no subscription (chat or paging attach to its ARN)
    assert default.resources("AWS::SNS::Subscription") == {}
    # Given alarm_email / Then that address is subscribed by email; a malformed one fails synth
    mailed = synthesize(tmp_path / "mailed", {"alarm_email": "oncall@example.com", "dax": "false"})
    (subscription,) = [s["Properties"] for s in mailed.resources("AWS::SNS::Subscription").values()]
    assert (subscription["Protocol"], subscription["Endpoint"]) == ("email", "oncall@example.com")
    with pytest.raises(ContextError, match="alarm_email"):
        synthesize(tmp_path / "bad", {"alarm_email": "not an address"})


def test_operations_output_names_every_dlq_for_the_redrive_command(variant: Synthesized) -> None:
    # Given the stack's OperationsEnvironment output (read by python -m mcp_platform.ops --stack)
    output = variant.json["Outputs"][OPERATIONS_OUTPUT]["Value"]
    # Then it names every dead-letter queue of the stack and the resources a replay writes to
    queues = set(variant.resources("AWS::SQS::Queue"))
    named = referenced_logical_ids(output)
    dlqs = {q for q in queues if "Dlq" in q}
    assert dlqs and dlqs <= named
    text = json.dumps(output)
    for variable in (EnvVars.SESSION_TABLE, EnvVars.AUDIT_TABLE, EnvVars.EVENT_STREAM, *QUEUE_VARIABLES.values()):
        assert variable in text, variable


def test_endpoint_error_rate_and_p99_alarms_on_the_opentelemetry_metrics(variant: Synthesized) -> None:
    # Then the endpoint's per-request metrics (OpenTelemetry MCP names) are alarmed overall
    (rate,) = alarms_on(variant, METRICS_NAMESPACE, OPERATION_ERRORS)
    assert (rate["Statistic"], rate["Threshold"]) == ("Average", 0.05)
    (p99,) = alarms_on(variant, METRICS_NAMESPACE, OPERATION_DURATION)
    assert p99["ExtendedStatistic"] == "p99"


def test_dashboard_graphs_the_busiest_tools_calls_errors_and_durations(variant: Synthesized) -> None:
    # Given the dashboard body (a JSON string CloudFormation joins)
    (dashboard,) = variant.resources("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    # Then per-tool widgets SEARCH the tool dimension for calls, errors, p50 and p99
    for title in ("Tools: calls per minute", "Tools: errors per minute", "Tools: p50 duration", "Tools: p99 duration"):
        assert title in body
    assert TOOL in body and "SORT(SEARCH(" in body


def dashboard_widgets(s: Synthesized) -> dict[str, dict]:
    """The dashboard's widgets by title: the body is a JSON text CloudFormation joins around
    references, each inside a string literal, so it parses once they are stood in for."""
    (dashboard,) = s.resources("AWS::CloudWatch::Dashboard").values()
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    body = json.loads("".join(part if isinstance(part, str) else "ref" for part in parts))
    return {
        widget["properties"]["title"]: widget["properties"]
        for widget in body["widgets"]
        if "title" in widget.get("properties", {})
    }


def test_dashboard_graphs_store_conflicts_throttles_and_dead_lettered_events(variant: Synthesized) -> None:
    # Given the dashboard's widgets
    widgets = dashboard_widgets(variant)
    store = widgets["Session store: conflicts / throttles per minute"]["metrics"]
    dead_lettered = widgets["Tool-call events dead-lettered per minute"]["metrics"]
    # Then each counter the endpoint and the task worker write is graphed as a sum per minute,
    # for every service that writes it (SEARCH), each series labelled with its service
    for (line,), counter in zip(
        (*store, *dead_lettered), (STORE_CONFLICTS, STORE_THROTTLES, EVENTS_DEAD_LETTERED), strict=True
    ):
        assert line["expression"] == f"SEARCH('{{{METRICS_NAMESPACE},service}} MetricName=\"{counter}\"', 'Sum', 60)"
        assert "PROP('Dim.service')" in line["label"]


# A SEARCH expression's schema and metric: SEARCH('{namespace,dimension,...} ... MetricName="name"', ...)
_SEARCH = re.compile(r"SEARCH\('\{([^}]*)\}[^']*?MetricName=\"([^\"]+)\"")


def metrics_read(s: Synthesized) -> set[tuple[str, frozenset[str]]]:
    """Every (metric, dimension names) of the platform's namespace an alarm or a dashboard widget
    reads: the alarms' metrics, the widgets' metrics and the schemas their SEARCH expressions name
    (a schema matches the metrics with exactly those dimensions)."""
    read = {
        (alarm["MetricName"], frozenset(d["Name"] for d in alarm.get("Dimensions", [])))
        for alarm in alarms(s)
        if alarm.get("Namespace") == METRICS_NAMESPACE
    }
    for widget in dashboard_widgets(s).values():
        for line in widget.get("metrics", []):
            if isinstance(line[0], dict):  # a math expression
                for schema, metric in _SEARCH.findall(line[0]["expression"]):
                    namespace, *dimensions = (part.strip() for part in schema.split(","))
                    if namespace == METRICS_NAMESPACE:
                        read.add((metric, frozenset(dimensions)))
            elif line[0] == METRICS_NAMESPACE:
                names = [item for item in line[2:] if not isinstance(item, dict)][0::2]
                read.add((line[1], frozenset(names)))
    return read


def endpoint_metric_lines() -> list[dict]:
    """The EMF lines the endpoint writes: a request of each kind (a tool call, a prompt get, a
    method with neither; with and without a first byte) and each counter, once per service and
    once per attribute."""
    stream = io.StringIO()
    writer = MetricsWriter(METRICS_NAMESPACE, SERVICE_NAME, stream)
    for method, target in (("tools/call", (TOOL, "echo")), ("prompts/get", (PROMPT, "greet")), ("ping", None)):
        for first_byte_ms in (12.5, None):
            writer.operation(
                method=method, seconds=0.01, failed=False, target=target, properties={}, first_byte_ms=first_byte_ms
            )
    for counter in (STORE_CONFLICTS, STORE_THROTTLES, EVENTS_DEAD_LETTERED, GOVERNANCE_REFUSALS):
        writer.count(counter)
        writer.count(counter, per=(TOOL, "echo"))
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_every_metric_an_alarm_or_the_dashboard_reads_is_in_the_endpoint_lines(default: Synthesized) -> None:
    # Given what the alarms and the dashboard read in the platform's namespace (the per-request
    # metrics overall and per tool, time to first byte, the counters per service)
    read = metrics_read(default)
    assert {metric for metric, _ in read} >= {OPERATION_DURATION, OPERATION_ERRORS, TIME_TO_FIRST_BYTE}
    # When the endpoint writes its lines
    written = {
        (metric["Name"], frozenset(dimensions))
        for line in endpoint_metric_lines()
        for directive in line["_aws"]["CloudWatchMetrics"]
        if directive["Namespace"] == METRICS_NAMESPACE
        for metric in directive["Metrics"]
        for dimensions in directive["Dimensions"]
    }
    # Then each metric is written under each dimension set that is read: none is left without data
    missing = sorted((metric, sorted(dimensions)) for metric, dimensions in read - written)
    assert not missing, f"read by an alarm or the dashboard, written by no line: {missing}"
