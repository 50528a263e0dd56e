"""The minimal profile (context key ``profile=minimal``) synthesizes what it promises, the default is
unchanged, and the idle cost the bench publishes is the one walked from these templates."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from local.platform import stream_mapping
from local.pollers import KinesisShards
from local.resources import plan_from_template
from mcp_platform.ops.lambda_records import SourceKind
from stacks.config import DEFAULTS, PROFILES, ContextError, PlatformConfig
from stacks.stream import INGEST_CONSUMER_NAME
from tests.infra.synth import Synthesized

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import cost

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def config(context: dict[str, Any]) -> PlatformConfig:
    return PlatformConfig.from_context(context.get)


def _mappings(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    """Each stream mapping's properties by its source kind (kinesis, dynamodb)."""
    found = {}
    for mapping in synthesized.resources("AWS::Lambda::EventSourceMapping").values():
        props = mapping["Properties"]
        source = synthesized.json["Resources"][props["EventSourceArn"]["Fn::GetAtt"][0]]["Type"]
        if source.startswith("AWS::Kinesis::"):
            found["kinesis"] = props
        elif source == "AWS::DynamoDB::Table":
            found["dynamodb"] = props
    return found


def test_minimal_is_one_provisioned_shard_24_hours_no_dax_no_vpc_no_consumer(minimal: Synthesized) -> None:
    # Given profile=minimal / Then one PROVISIONED shard with the retention its shard-hour includes
    stream = minimal.one("AWS::Kinesis::Stream")["Properties"]
    assert stream["StreamModeDetails"] == {"StreamMode": "PROVISIONED"}
    assert stream["ShardCount"] == 1 and stream["RetentionPeriodHours"] == 24
    assert stream["StreamEncryption"]["EncryptionType"] == "KMS"  # K9 still holds
    # And no DAX, no VPC, no endpoints, no fan-out consumer, no shard-level metrics
    for absent in (
        "AWS::DAX::Cluster",
        "AWS::EC2::VPC",
        "AWS::EC2::VPCEndpoint",
        "AWS::EC2::Subnet",
        "AWS::Kinesis::StreamConsumer",
        "Custom::AWS",
    ):
        assert minimal.resources(absent) == {}, absent
    # And no endpoint function in a VPC
    assert all("VpcConfig" not in f["Properties"] for f in minimal.resources("AWS::Lambda::Function").values())


def test_minimal_ingest_maps_the_stream_with_the_same_delivery_rules(
    default: Synthesized, minimal: Synthesized
) -> None:
    # Given both templates' ingest mappings
    stream_id = minimal.logical_id("AWS::Kinesis::Stream")
    consumer_id = default.logical_id("AWS::Kinesis::StreamConsumer")
    direct, through_consumer = _mappings(minimal)["kinesis"], _mappings(default)["kinesis"]
    # Then the minimal one reads the stream itself, the default one its EFO consumer (K5)
    assert direct["EventSourceArn"] == {"Fn::GetAtt": [stream_id, "Arn"]}
    assert through_consumer["EventSourceArn"] == {"Fn::GetAtt": [consumer_id, "ConsumerARN"]}
    # And every delivery rule (A1: position, batch, bisect, retries, age, partial failures) is the same
    rules = ["StartingPosition", "BatchSize", "ParallelizationFactor", "BisectBatchOnFunctionError"]
    rules += ["MaximumRetryAttempts", "MaximumRecordAgeInSeconds", "FunctionResponseTypes"]
    assert {k: direct.get(k) for k in rules} == {k: through_consumer.get(k) for k in rules}
    assert "OnFailure" in direct["DestinationConfig"]
    # And the ingest function may read the stream (its role names the stream's ARN)
    policies = json.dumps([p["Properties"] for p in minimal.resources("AWS::IAM::Policy").values()])
    assert "kinesis:GetRecords" in policies


def test_minimal_watches_ingest_lag_through_its_mapping(minimal: Synthesized) -> None:
    # Given no EFO consumer / Then no consumer-lag alarm, and the ingest mapping's iterator age alarm stays
    alarms = [a["Properties"] for a in minimal.resources("AWS::CloudWatch::Alarm").values()]
    metrics = {a.get("MetricName") for a in alarms}
    assert "SubscribeToShardEvent.MillisBehindLatest" not in metrics
    assert "IteratorAge" in metrics and "WriteProvisionedThroughputExceeded" in metrics
    assert all(a["AlarmActions"] for a in alarms)  # every alarm has an action


def test_the_local_platform_reads_a_directly_mapped_stream_as_lambda_delivers_it(minimal: Synthesized) -> None:
    # Given the minimal template's plan on the local platform
    plan = plan_from_template(minimal.json, "dev")
    assert plan.consumers == []
    (stream,) = plan.streams
    (spec,) = [m for m in plan.mappings if m.source_logical_id == stream.logical_id]
    stream_arn = f"arn:aws:kinesis:us-east-1:123456789012:stream/{stream.name}"
    attributes: dict[str, Any] = {stream.logical_id: {"Arn": stream_arn}}
    attributes[spec.function_logical_id] = {"Arn": "arn:aws:lambda:us-east-1:123456789012:function:ingest"}
    clients: Any = SimpleNamespace(kinesis=object(), streams=object())
    # When its mapping is resolved
    source, mapping = stream_mapping(spec, plan, attributes, clients, "us-east-1")
    # Then it polls the stream's shards, records carrying the stream's ARN, as a Kinesis mapping
    assert isinstance(source, KinesisShards) and source.stream_name == stream.name
    assert source._consumer_arn == stream_arn
    assert mapping.kind is SourceKind.KINESIS and mapping.stream_arn == stream_arn


def test_the_profile_sets_defaults_that_explicit_keys_override() -> None:
    minimal = config({"profile": "minimal"})
    assert (minimal.dax, minimal.stream_mode, minimal.shard_count) == (False, "PROVISIONED", 1)
    assert (minimal.retention_hours, minimal.ingest_fan_out) == (24, False)
    # Given explicit keys (the -c string forms) / Then each wins over the profile's default
    tuned = config({"profile": "minimal", "retention_hours": "168", "ingest_fan_out": "true", "shard_count": "2"})
    assert (tuned.retention_hours, tuned.ingest_fan_out, tuned.shard_count, tuned.dax) == (168, True, 2, False)
    # And an unknown profile names the allowed ones
    with pytest.raises(ContextError, match=r"profile.*minimal"):
        config({"profile": "tiny"})
    # And every key a profile sets is a context key
    assert all(set(defaults) <= set(DEFAULTS) for defaults in PROFILES.values())


def test_the_default_is_unchanged(default: Synthesized) -> None:
    plain = config({})
    assert plain.profile is None and plain.ingest_fan_out is True and plain.dax is True
    stream = default.one("AWS::Kinesis::Stream")["Properties"]
    assert stream["StreamModeDetails"] == {"StreamMode": "ON_DEMAND"} and stream["RetentionPeriodHours"] == 168
    assert default.one("AWS::Kinesis::StreamConsumer")["Properties"]["ConsumerName"] == INGEST_CONSUMER_NAME
    assert len(default.resources("AWS::DAX::Cluster")) == 1
    assert len(default.resources("Custom::AWS")) == 1  # K8's shard-level metrics


def test_idle_cost_walked_from_the_templates(default: Synthesized, minimal: Synthesized) -> None:
    # Given the default and the minimal templates, priced as the bench prices them
    by_default = cost.idle_costs("default", [default.json])
    by_minimal = cost.idle_costs("minimal", [minimal.json])
    hours = cost.HOURS_PER_MONTH
    # Then the default pays the on-demand stream, one DAX node and 4 interface endpoints x 2 AZs
    assert by_default.items["Kinesis stream"] == pytest.approx(hours * 0.04)
    assert by_default.items["DAX"] == pytest.approx(hours * 0.04)
    assert by_default.items["VPC endpoints"] == pytest.approx(8 * hours * 0.01)
    # And the minimal profile one shard-hour, nothing for DAX, endpoints, a consumer or shard metrics
    assert by_minimal.items["Kinesis stream"] == pytest.approx(hours * 0.015)
    for item in ("DAX", "VPC endpoints", "fan-out consumer", "shard metrics"):
        assert by_minimal.items[item] == 0, item
    assert by_minimal.total < by_default.total / 5
    assert by_default.unpriced == () and by_minimal.unpriced == ()


def test_every_resource_type_of_every_variant_is_priced_or_free_at_idle(variant: Synthesized) -> None:
    # Then the idle table cannot leave out a resource type a configuration deploys
    assert cost.idle_costs("variant", [variant.json, *variant.other_templates().values()]).unpriced == ()
