"""`python -m mcp_platform.ops dlq ...` on moto: every dead-letter kind is shown decoded, replayed
through the path that failed (ingest's and audit's own logic for the stream mappings' pointers),
deleted only once replayed, and a second replay of the same message duplicates nothing.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from local.failure_record import RETRIES_EXHAUSTED, failure_record
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.kinesis.batching import Record
from mcp_platform.adapters.sqs.dead_letters import DeadLetterQueue, FailedRecord
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.config import EnvVars
from mcp_platform.ops.__main__ import run
from mcp_platform.ops.dead_letters import QUEUE_VARIABLES
from mcp_platform.ops.lambda_records import SourceKind, dynamodb_event_record, kinesis_event_record
from tests.support.session_stream import audit_records
from tests.support.tables import create_session_table

pytestmark = pytest.mark.integration

REGION = "us-east-1"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


@dataclass
class Deployment:
    env: dict[str, str]
    clients: dict[str, Any]

    def send(self, kind: str, body: str) -> None:
        self.clients["sqs"].send_message(QueueUrl=self.env[QUEUE_VARIABLES[kind]], MessageBody=body)

    def waiting(self, kind: str) -> int:
        attributes = self.clients["sqs"].get_queue_attributes(
            QueueUrl=self.env[QUEUE_VARIABLES[kind]], AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])

    def ops(self, *argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
        code = run(["dlq", *argv], self.env, self.clients)
        return code, capsys.readouterr().out

    def stream_records(self) -> list[dict[str, Any]]:
        kinesis = self.clients["kinesis"]
        stream = self.env[EnvVars.EVENT_STREAM]
        shard = kinesis.list_shards(StreamName=stream)["Shards"][0]["ShardId"]
        iterator = kinesis.get_shard_iterator(StreamName=stream, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
        return list(kinesis.get_records(ShardIterator=iterator["ShardIterator"])["Records"])


@pytest.fixture
def deployment(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Deployment]:
    monkeypatch.setenv("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")  # in-process DynamoDB Streams (REFERENCE)
    with mock_aws():
        clients = {
            name: boto3.client(name, region_name=REGION)
            for name in ("sqs", "kinesis", "dynamodb", "dynamodbstreams", "cloudformation")
        }
        create_session_table(clients["dynamodb"], "sessions")
        clients["dynamodb"].create_table(
            TableName="audit",
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[
                {"AttributeName": ts.AUDIT_PK, "KeyType": "HASH"},
                {"AttributeName": ts.AUDIT_SK, "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": ts.AUDIT_PK, "AttributeType": "S"},
                {"AttributeName": ts.AUDIT_SK, "AttributeType": "S"},
            ],
        )
        clients["kinesis"].create_stream(StreamName="events", ShardCount=1)
        env = {
            EnvVars.REGION: REGION,
            EnvVars.SESSION_TABLE: "sessions",
            EnvVars.AUDIT_TABLE: "audit",
            EnvVars.EVENT_STREAM: "events",
            EnvVars.TASK_QUEUE_URL: clients["sqs"].create_queue(QueueName="tasks")["QueueUrl"],
        }
        for kind, variable in QUEUE_VARIABLES.items():
            env[variable] = clients["sqs"].create_queue(QueueName=f"{kind}-dlq")["QueueUrl"]
        yield Deployment(env, clients)


def live_session(deployment: Deployment, session_id: str) -> None:
    deployment.clients["dynamodb"].put_item(
        TableName="sessions",
        Item={
            ts.PK: {"S": ts.session_pk(session_id)},
            ts.SK: {"S": ts.METADATA_SK},
            ts.STATUS: {"S": ts.STATUS_ACTIVE},
            ts.TTL: {"N": str(int(time.time()) + 3600)},
            ts.VERSION: {"N": "1"},
            ts.OWNER: {"S": "alice"},
        },
    )


def tool_event(call_id: str) -> ToolCallEvent:
    return ToolCallEvent(
        event_id=call_id,
        principal="alice",
        tool="append_note",
        status="ok",
        started_at="2026-12-01T10:00:00.000000Z",
        finished_at="2026-12-01T10:00:00.250000Z",
        request_bytes=100,
        response_bytes=200,
        duration_ms=250.0,
        session_id="s-1",
    )


def tool_records(deployment: Deployment) -> list[dict[str, Any]]:
    items = deployment.clients["dynamodb"].scan(TableName="sessions")["Items"]
    return [item for item in items if item[ts.SK]["S"].startswith(ts.TOOL_RECORD_PREFIX)]


def ingest_failure(deployment: Deployment, events: list[ToolCallEvent]) -> str:
    """Events on the stream, and the on-failure record ingest's mapping sent after its retries."""
    kinesis = deployment.clients["kinesis"]
    for event in events:
        kinesis.put_record(StreamName="events", Data=event.to_bytes(), PartitionKey=event.session_id or event.event_id)
    stream_arn = kinesis.describe_stream_summary(StreamName="events")["StreamDescriptionSummary"]["StreamARN"]
    records = [
        kinesis_event_record(r, shard_id="shardId-000000000000", source_arn=stream_arn, region=REGION)
        for r in deployment.stream_records()
    ]
    return on_failure(SourceKind.KINESIS, records, "shardId-000000000000", stream_arn)


def on_failure(kind: SourceKind, records: list[dict[str, Any]], shard_id: str, stream_arn: str) -> str:
    """What a stream mapping sends its on-failure destination after its retries (a pointer)."""
    message = failure_record(
        kind=kind,
        records=records,
        shard_id=shard_id,
        stream_arn=stream_arn,
        function_arn="arn:aws:lambda:us-east-1:123456789012:function:consumer",
        condition=RETRIES_EXHAUSTED,
        invoke_count=4,
        function_error="Unhandled",
        now=time.time(),
    )
    return json.dumps(message)


def test_ingest_pointer_is_replayed_through_ingest_once_its_cause_is_fixed(
    deployment: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two tool-call events ingest failed on (the table was throttling), dead-lettered as a pointer
    live_session(deployment, "s-1")
    message = ingest_failure(deployment, [tool_event("call-1"), tool_event("call-2")])
    deployment.send("ingest", message)
    # When the replay runs while the table still throttles / Then nothing is recorded, the message stays
    dynamodb_events = deployment.clients["dynamodb"].meta.events
    dynamodb_events.register("before-call.dynamodb.*", throttled, unique_id="throttle")
    code, out = deployment.ops("replay", "ingest", capsys=capsys)
    dynamodb_events.unregister("before-call.dynamodb.*", unique_id="throttle")
    assert (code, tool_records(deployment), deployment.waiting("ingest")) == (1, [], 1), out
    assert "failed, kept" in out and "ProvisionedThroughputExceededException" in out
    # When the cause is gone and the replay runs again
    code, out = deployment.ops("replay", "ingest", capsys=capsys)
    # Then both calls are recorded, the message is gone
    assert code == 0 and out.strip().endswith("replayed"), out
    assert sorted(r[ts.SK]["S"].rsplit("#", 1)[-1] for r in tool_records(deployment)) == ["call-1", "call-2"]
    assert deployment.waiting("ingest") == 0
    # And replaying the same pointer again duplicates nothing (ingest dedupes by event id)
    deployment.send("ingest", message)
    assert deployment.ops("replay", "ingest", capsys=capsys)[0] == 0
    assert len(tool_records(deployment)) == 2


def throttled(**_: Any) -> None:
    raise ClientError(
        {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "Rate exceeded"}}, "PutItem"
    )


def test_producer_records_go_back_on_the_stream_with_their_partition_key(
    deployment: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a record Kinesis refused after every retry, dead-lettered by the producer's own DLQ code
    event = dataclasses.replace(tool_event("call-9"), trace_id=TRACE_ID, span_id="00f067aa0ba902b7")
    record = Record(data=event.to_bytes(), partition_key="s-1")
    DeadLetterQueue(deployment.clients["sqs"], deployment.env[EnvVars.PRODUCER_DLQ_URL], stream_name="events").send(
        [FailedRecord(record, "ProvisionedThroughputExceededException", "Rate exceeded", 3)]
    )
    # When an operator shows it / Then it is decoded: which call, which session, which trace, which error
    _, out = deployment.ops("show", "producer", capsys=capsys)
    shown = json.loads(out.strip())
    assert (shown["call"], shown["session"], shown["trace"], shown["error"]) == (
        "call-9",
        "s-1",
        TRACE_ID,
        "ProvisionedThroughputExceededException",
    )
    # When it is replayed / Then the stream holds exactly its data under its key, and the DLQ is empty
    assert deployment.ops("replay", "producer", capsys=capsys)[0] == 0
    (put,) = deployment.stream_records()
    assert (bytes(put["Data"]), put["PartitionKey"]) == (event.to_bytes(), "s-1")
    assert deployment.waiting("producer") == 0


def test_audit_pointer_is_replayed_through_the_audit_processor_idempotently(
    deployment: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a session change in the table stream, and the audit mapping's on-failure record for it
    live_session(deployment, "s-2")
    streams = deployment.clients["dynamodbstreams"]
    stream_arn = deployment.clients["dynamodb"].describe_table(TableName="sessions")["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=stream_arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    raw = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    records = [dynamodb_event_record(r, stream_arn=stream_arn) for r in raw]
    message = on_failure(SourceKind.DYNAMODB, records, shard, stream_arn)
    # When it is replayed twice
    for _ in range(2):
        deployment.send("audit", message)
        assert deployment.ops("replay", "audit", capsys=capsys)[0] == 0
    # Then the change has exactly one audit record, keyed by its sequence number (A2)
    audited = deployment.clients["dynamodb"].scan(TableName="audit")["Items"]
    assert [r["sequence_number"] for r in audit_records(audited)] == [raw[0]["dynamodb"]["SequenceNumber"]]


def test_tasks_and_expiry_messages_go_back_where_they_came_from(
    deployment: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a task message the worker could not handle, and an expiry event audit could not publish
    deployment.send("tasks", json.dumps({"taskId": "t-1", "principal": "alice"}))
    expired = {"type": "session.expired", "v": 1, "session_id": "s-3"}
    deployment.send("expiry", json.dumps({"event": expired, "error_code": "InternalFailure", "stream": "events"}))
    # When both are replayed
    assert deployment.ops("replay", "tasks", capsys=capsys)[0] == 0
    assert deployment.ops("replay", "expiry", capsys=capsys)[0] == 0
    # Then the task is queued again for the worker, and the event is on the stream under its session
    queued = deployment.clients["sqs"].receive_message(QueueUrl=deployment.env[EnvVars.TASK_QUEUE_URL])["Messages"]
    assert json.loads(queued[0]["Body"])["taskId"] == "t-1"
    (put,) = deployment.stream_records()
    assert (json.loads(bytes(put["Data"])), put["PartitionKey"]) == (expired, "s-3")
    assert (deployment.waiting("tasks"), deployment.waiting("expiry")) == (0, 0)


def test_purge_needs_confirmation_and_list_counts_every_queue(
    deployment: Deployment, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a message in the producer DLQ
    deployment.send("producer", base64.b64encode(b"x").decode())
    # When list runs / Then every DLQ is listed with its depth
    code, out = deployment.ops("list", capsys=capsys)
    assert code == 0 and [line.split()[:2] for line in out.splitlines()] == [
        ["producer", "1"],
        ["ingest", "0"],
        ["audit", "0"],
        ["expiry", "0"],
        ["tasks", "0"],
    ]
    # When purge runs without --yes / Then nothing is deleted; with --yes the queue is empty
    assert deployment.ops("purge", "producer", capsys=capsys)[0] == 2
    assert deployment.waiting("producer") == 1
    assert deployment.ops("purge", "producer", "--yes", capsys=capsys)[0] == 0
    assert deployment.waiting("producer") == 0
