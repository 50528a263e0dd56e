"""Template -> local resource plan, intrinsic resolution and event-record shapes (pure)."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest

from local.intrinsics import UnresolvableError, resolve
from local.resources import local_name, plan_from_template
from mcp_platform.ops.lambda_records import (
    SourceKind,
    arrival_of,
    dynamodb_event_record,
    kinesis_event_record,
    sequence_of,
)

TEMPLATE = {
    "Resources": {
        "DataSessionTableA7791A6F": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
                "TimeToLiveSpecification": {"AttributeName": "ttl", "Enabled": True},
                "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
            },
        },
        "FnAAAA1111": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Handler": "audit_handler.lambda_handler",
                "Runtime": "python3.13",
                "Environment": {"Variables": {"SESSION_TABLE_NAME": {"Ref": "DataSessionTableA7791A6F"}}},
            },
        },
        "NodeFn": {
            "Type": "AWS::Lambda::Function",
            "Properties": {"Handler": "index.handler", "Runtime": "nodejs24.x"},
        },
        "MapB2B2B2B2": {
            "Type": "AWS::Lambda::EventSourceMapping",
            "Properties": {
                "FunctionName": {"Ref": "FnAAAA1111"},
                "EventSourceArn": {"Fn::GetAtt": ["DataSessionTableA7791A6F", "StreamArn"]},
                "BatchSize": 100,
                "BisectBatchOnFunctionError": True,
                "MaximumRetryAttempts": 3,
                "FunctionResponseTypes": ["ReportBatchItemFailures"],
                "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": ["AuditDlqAF43A62C", "Arn"]}}},
            },
        },
    }
}


def test_local_names_drop_the_cdk_hash_and_carry_the_stage() -> None:
    """Given CDK logical ids, then local names are stable, readable and stage-scoped."""
    assert local_name("dev", "DataSessionTableA7791A6F") == "mcp-dev-data-session-table"
    assert local_name("dev", "ProducerDlq60E4D145") == "mcp-dev-producer-dlq"


def test_plan_reads_tables_functions_and_mappings() -> None:
    """Given a template, when planned, then key schema, TTL, stream view type and the mapping's
    A1 settings are carried over, and non-Python functions are left out."""
    plan = plan_from_template(TEMPLATE, "dev")
    (table,) = plan.tables
    assert (table.ttl_attribute, table.stream_view_type) == ("ttl", "NEW_AND_OLD_IMAGES")
    assert [f.logical_id for f in plan.functions] == ["FnAAAA1111"]
    (mapping,) = plan.mappings
    assert (mapping.batch_size, mapping.max_retries, mapping.bisect_on_error) == (100, 3, True)
    assert mapping.report_batch_item_failures and mapping.on_failure_logical_id == "AuditDlqAF43A62C"
    assert mapping.max_record_age_s == -1  # absent = CloudFormation's default (no limit)


def test_a_mapping_on_a_functions_live_alias_runs_that_function() -> None:
    """Given the mapping invoking the function's alias, spelled as CDK spells it, when planned, then
    it runs the function the alias belongs to (locally there is one version: the code as it is)."""
    template = {"Resources": dict(TEMPLATE["Resources"])}
    template["Resources"]["FnLive1234ABCD"] = {
        "Type": "AWS::Lambda::Alias",
        "Properties": {"FunctionName": {"Ref": "FnAAAA1111"}, "Name": "live", "FunctionVersion": "1"},
    }
    mapping = template["Resources"]["MapB2B2B2B2"]
    alias_name = {"Fn::Join": ["", [{"Fn::Select": [6, {"Fn::Split": [":", {"Ref": "FnLive1234ABCD"}]}]}, ":live"]]}
    template["Resources"]["MapB2B2B2B2"] = {
        **mapping,
        "Properties": {**mapping["Properties"], "FunctionName": alias_name},
    }
    (planned,) = plan_from_template(template, "dev").mappings
    assert planned.function_logical_id == "FnAAAA1111"


def test_intrinsics_resolve_against_emulator_attributes() -> None:
    """Given Ref/GetAtt/Join, when resolved, then they become the emulator's values; an unknown
    intrinsic fails loudly."""
    attributes = {"T": {"Ref": "tbl", "Arn": "arn:t"}}
    assert resolve({"Ref": "T"}, attributes, "us-east-1") == "tbl"
    assert (
        resolve({"Fn::Join": ["/", [{"Fn::GetAtt": ["T", "Arn"]}, {"Ref": "AWS::Region"}]]}, attributes, "eu-west-1")
        == "arn:t/eu-west-1"
    )
    with pytest.raises(UnresolvableError):
        resolve({"Fn::ImportValue": "x"}, attributes, "us-east-1")
    with pytest.raises(UnresolvableError):
        resolve({"Ref": "Missing"}, attributes, "us-east-1")


def test_kinesis_record_has_the_lambda_shape_with_the_consumer_arn() -> None:
    """K5: Given a GetRecords record, then the event record is base64 data and carries the EFO consumer ARN."""
    raw = {
        "SequenceNumber": "42",
        "PartitionKey": "s-1",
        "Data": b'{"a":1}',
        "ApproximateArrivalTimestamp": datetime(2026, 11, 29, tzinfo=UTC),
    }
    event = kinesis_event_record(raw, shard_id="shardId-000000000001", source_arn="arn:consumer", region="us-east-1")
    assert base64.b64decode(event["kinesis"]["data"]) == b'{"a":1}'
    assert event["eventSourceARN"] == "arn:consumer" and event["eventID"] == "shardId-000000000001:42"
    assert sequence_of(SourceKind.KINESIS, event) == "42"
    assert arrival_of(SourceKind.KINESIS, event) == datetime(2026, 11, 29, tzinfo=UTC).timestamp()


def test_dynamodb_record_has_epoch_seconds_and_base64_binaries() -> None:
    """Given a Streams record, then ApproximateCreationDateTime is epoch seconds and B values base64."""
    raw = {
        "eventID": "e1", "eventName": "INSERT", "eventVersion": "1.1", "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": datetime(2026, 11, 29, tzinfo=UTC), "SequenceNumber": "7",
            "NewImage": {"blob": {"B": b"\x00\x01"}}, "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }  # fmt: skip
    event = dynamodb_event_record(raw, stream_arn="arn:stream")
    assert event["dynamodb"]["ApproximateCreationDateTime"] == int(datetime(2026, 11, 29, tzinfo=UTC).timestamp())
    assert event["dynamodb"]["NewImage"]["blob"]["B"] == "AAE="
    assert event["eventSource"] == "aws:dynamodb" and event["eventSourceARN"] == "arn:stream"
