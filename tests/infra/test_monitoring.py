"""Alarms (K8, A5, S4, DLQs, function health) and the dashboard in the template."""

from __future__ import annotations

import pytest

from stacks.endpoint import METRICS_NAMESPACE, SERVICE_NAME
from tests.infra.synth import Synthesized

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
    # Then the endpoint's own TimeToFirstByte (ms) metric alarms above 5 s
    (ttfb,) = alarms_on(variant, METRICS_NAMESPACE, "TimeToFirstByte")
    assert ttfb["Threshold"] == 5000
    assert ttfb["Dimensions"] == [{"Name": "service", "Value": SERVICE_NAME}]
    assert ttfb["Statistic"] == "Maximum"


def test_one_dashboard(variant: Synthesized) -> None:
    dashboard = variant.one("AWS::CloudWatch::Dashboard")["Properties"]
    assert dashboard["DashboardName"].startswith("mcp-platform-")
