"""The local emulator holds the resources the CDK template declares (SPEC "Local platform").

The template is synthesized the way `python -m local` does it (dax=false, no bundling), with the
variables that add resources set (`MCP_RATE_LIMITS`: the limits table); the resources are created
on a moto server by the local platform's own code; then every table, stream, consumer and queue
of the template is checked on the emulator against the template itself (not against the local
plan, so a translation bug cannot hide).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from local.emulator import Clients, describe, provision
from local.resources import ResourcePlan, local_name, plan_from_template
from local.template import synthesize
from tests.support.aws import REGION, fake_credentials, moto_server

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_parity")]


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in template["Resources"].items() if v["Type"] == kind}


@pytest.fixture(scope="module")
def emulated() -> Iterator[tuple[dict[str, Any], ResourcePlan, Clients]]:
    synthesized = synthesize(environ={"MCP_RATE_LIMITS": '{"principal": "5/minute"}'})
    plan = plan_from_template(synthesized.template, synthesized.stage)
    with fake_credentials(), moto_server() as endpoint_url:
        clients = Clients.connect(endpoint_url, REGION)
        provision(plan, clients)
        yield synthesized.template, plan, clients


def test_every_table_matches_keys_gsi_ttl_and_stream(emulated: tuple[dict[str, Any], ResourcePlan, Clients]) -> None:
    """D1/D8/D9/A3: Given the template's tables, then each exists locally with the same key
    schema, attribute types, GSIs (keys and projection), TTL attribute and stream view type."""
    template, plan, clients = emulated
    tables = _of_type(template, "AWS::DynamoDB::Table")
    assert len(tables) >= 3
    assert any(logical_id.startswith("GovernanceLimitsTable") for logical_id in tables)
    for logical_id, props in tables.items():
        name = local_name(plan.stage, logical_id)
        local = clients.dynamodb.describe_table(TableName=name)["Table"]
        assert local["KeySchema"] == props["KeySchema"], name
        assert sorted(local["AttributeDefinitions"], key=str) == sorted(props["AttributeDefinitions"], key=str)
        expected_gsis = {g["IndexName"]: g for g in props.get("GlobalSecondaryIndexes", [])}
        local_gsis = {g["IndexName"]: g for g in local.get("GlobalSecondaryIndexes", [])}
        assert local_gsis.keys() == expected_gsis.keys(), name
        for index, gsi in expected_gsis.items():
            assert local_gsis[index]["KeySchema"] == gsi["KeySchema"]
            assert local_gsis[index]["Projection"]["ProjectionType"] == gsi["Projection"]["ProjectionType"]
            assert sorted(local_gsis[index]["Projection"].get("NonKeyAttributes", [])) == sorted(
                gsi["Projection"].get("NonKeyAttributes", [])
            )
        ttl = clients.dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        expected_ttl = props.get("TimeToLiveSpecification", {})
        assert ttl.get("AttributeName") == expected_ttl.get("AttributeName"), name
        assert (ttl["TimeToLiveStatus"] == "ENABLED") == bool(expected_ttl.get("Enabled")), name
        expected_stream = props.get("StreamSpecification", {}).get("StreamViewType")
        assert local.get("StreamSpecification", {}).get("StreamViewType") == expected_stream, name


def test_stream_consumer_and_queues_exist(emulated: tuple[dict[str, Any], ResourcePlan, Clients]) -> None:
    """K5/K7/A1: Given the template's stream, EFO consumer and queues, then each exists locally:
    the stream with its mode and retention, the consumer registered on it, every DLQ."""
    template, plan, clients = emulated
    for logical_id, props in _of_type(template, "AWS::Kinesis::Stream").items():
        summary = clients.kinesis.describe_stream_summary(StreamName=local_name(plan.stage, logical_id))
        summary = summary["StreamDescriptionSummary"]
        assert summary["StreamModeDetails"]["StreamMode"] == props["StreamModeDetails"]["StreamMode"]
        assert summary["RetentionPeriodHours"] == props["RetentionPeriodHours"]
        consumers = [
            c for c in _of_type(template, "AWS::Kinesis::StreamConsumer").values()
            if c["StreamARN"]["Fn::GetAtt"][0] == logical_id
        ]  # fmt: skip
        registered = clients.kinesis.list_stream_consumers(StreamARN=summary["StreamARN"])["Consumers"]
        assert sorted(c["ConsumerName"] for c in registered) == sorted(c["ConsumerName"] for c in consumers)
    queues = _of_type(template, "AWS::SQS::Queue")
    assert len(queues) >= 3
    for logical_id in queues:
        clients.sqs.get_queue_url(QueueName=local_name(plan.stage, logical_id))


def test_mappings_and_function_environments_resolve(emulated: tuple[dict[str, Any], ResourcePlan, Clients]) -> None:
    """A1: Given the template's event source mappings, then each local mapping has the same batch
    size, retries, bisect, record age and DLQ, and every function env var resolves locally."""
    template, plan, clients = emulated
    attributes = describe(plan, clients, REGION)
    mappings = _of_type(template, "AWS::Lambda::EventSourceMapping")
    assert {m.logical_id for m in plan.mappings} == set(mappings)
    queues = {q.logical_id: q for q in plan.queues}
    for spec in plan.mappings:
        props = mappings[spec.logical_id]
        assert spec.batch_size == props["BatchSize"]
        assert spec.source_logical_id in attributes
        if spec.source_logical_id in queues:
            # The task queue: retries and the DLQ are the queue's own (redrive), applied locally
            # by the emulator's SQS exactly as the template sets them.
            queue = _of_type(template, "AWS::SQS::Queue")[spec.source_logical_id]
            local_queue = queues[spec.source_logical_id]
            assert local_queue.max_receive_count == queue["RedrivePolicy"]["maxReceiveCount"]
            assert local_queue.visibility_timeout_s == queue["VisibilityTimeout"]
            assert local_queue.dead_letter_logical_id in attributes
            redrive = clients.sqs.get_queue_attributes(
                QueueUrl=attributes[spec.source_logical_id]["Ref"], AttributeNames=["RedrivePolicy"]
            )["Attributes"]["RedrivePolicy"]
            assert json.loads(redrive)["deadLetterTargetArn"] == attributes[local_queue.dead_letter_logical_id]["Arn"]
            continue
        assert spec.max_retries == props["MaximumRetryAttempts"]
        assert spec.bisect_on_error == props["BisectBatchOnFunctionError"]
        assert spec.max_record_age_s == props["MaximumRecordAgeInSeconds"]
        assert spec.on_failure_logical_id in attributes  # the DLQ exists locally
    from local.bootstrap import LocalOptions
    from local.environment import function_environment

    options = LocalOptions(8000, 4566, REGION, "", "", attach=False)
    for function in plan.functions:
        env = function_environment(function, attributes, options)
        assert all(isinstance(value, str) for value in env.values())
        assert set(function.environment) - set(env) <= {
            name for name in function.environment if name.startswith(("AWS_LWA_", "AWS_LAMBDA_EXEC_WRAPPER"))
        }
