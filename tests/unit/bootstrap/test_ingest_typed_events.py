"""A4/A5: typed platform events on the tool-event stream are known to ingest, never poison.

The audit function publishes ``session.expired`` (A4) on the same Kinesis stream as the
endpoint's tool-call events. Ingest must acknowledge it (no batch item failure, so no retry,
bisect or DLQ message; no usage counted; no tool-call record written) while a genuinely
malformed record is still reported as a batch item failure (A5). The records are built by the
audit function's own code (summary -> expiry event -> KinesisEventPublisher bytes) and go
through the real ingest handler; DynamoDB is a fake that records every call.
"""

from __future__ import annotations

import base64
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.stream_images import read_stream_change
from mcp_platform.adapters.kinesis.audit_publisher import KinesisEventPublisher
from mcp_platform.application.audit.expiry import build_summary, expiry_event
from mcp_platform.application.events.ingest import PoisonRecordError
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.bootstrap.ingest import event_ingestor

TTL_IDENTITY = {"type": ts.TTL_IDENTITY_TYPE, "principalId": ts.TTL_PRINCIPAL}
STREAM_ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/tool-events"


@dataclass
class LambdaContext:
    function_name: str = "ingest"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:ingest"
    aws_request_id: str = "req-1"


class RecordingDynamoDB:
    """Accepts every transaction and remembers it: a test can tell what ingest wrote."""

    def __init__(self) -> None:
        self.transactions: list[list[dict[str, Any]]] = []

    def transact_write_items(self, TransactItems: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        self.transactions.append(TransactItems)
        return {}

    def get_item(self, **_: Any) -> dict[str, Any]:
        return {}  # no checkpoint yet: a shard's first batch


class CapturingKinesis:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def put_record(self, **request: Any) -> dict[str, Any]:
        self.records.append(request)
        return {"ShardId": "shardId-000000000000", "SequenceNumber": str(len(self.records))}


def published_expiry_bytes(session_id: str = "s1") -> bytes:
    """The bytes the audit function puts on the stream when ``session_id`` expires by TTL."""
    removal = read_stream_change(
        {
            "eventID": "ddb-event-1",
            "eventName": "REMOVE",
            "userIdentity": TTL_IDENTITY,
            "dynamodb": {
                "Keys": {ts.PK: {"S": ts.session_pk(session_id)}, ts.SK: {"S": ts.METADATA_SK}},
                "SequenceNumber": "4960000000000000000001",
                "ApproximateCreationDateTime": 1_795_000_100.0,
                "OldImage": {
                    ts.PK: {"S": ts.session_pk(session_id)},
                    ts.SK: {"S": ts.METADATA_SK},
                    ts.OWNER: {"S": "alice"},
                    ts.VERSION: {"N": "3"},
                    ts.TTL: {"N": "1795000000"},
                    ts.CREATED_AT: {"S": "2026-11-18T10:00:00Z"},
                },
            },
        }
    )
    summary = build_summary(removal, ["2026-11-18T10:05:00.000000Z"])  # the held tool record's start
    kinesis = CapturingKinesis()
    # As SessionExpiryHandler calls it: with the summary as stored, not yet published.
    KinesisEventPublisher(kinesis, "tool-events").publish(expiry_event({**summary, "event_published": False}))
    (record,) = kinesis.records
    return bytes(record["Data"])


def kinesis_record(seq: int, data: bytes | str) -> dict[str, Any]:
    payload = data if isinstance(data, str) else base64.b64encode(data).decode()
    sequence = f"4959{seq:052d}"
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": "s1",
            "sequenceNumber": sequence,
            "data": payload,
            "approximateArrivalTimestamp": 1_795_000_000.123,
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"shardId-000000000000:{sequence}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": "arn:aws:iam::123456789012:role/ingest",
        "awsRegion": "us-east-1",
        "eventSourceARN": STREAM_ARN,
    }


@pytest.fixture
def ddb() -> RecordingDynamoDB:
    return RecordingDynamoDB()


@pytest.fixture
def handler(aws_env: None, monkeypatch: pytest.MonkeyPatch, ddb: RecordingDynamoDB) -> ModuleType:
    monkeypatch.setenv("SESSION_TABLE_NAME", "sessions")
    module = importlib.reload(importlib.import_module("ingest_handler"))
    # The handler's warm-reused ingestor, on the recording fake (no AWS call is possible).
    monkeypatch.setattr(module, "ingestor", event_ingestor(ddb, "sessions", sleep=lambda _: None))
    return module


def _malformed_expiry(**changes: Any) -> str:
    body = json.loads(published_expiry_bytes()) | changes
    return base64.b64encode(json.dumps({k: v for k, v in body.items() if v is not None}).encode()).decode()


def test_a4_session_expired_record_is_acknowledged_not_a_batch_failure(handler: ModuleType, ddb: Any) -> None:
    """A4/A5: Given the record the audit function publishes when a session expires by TTL,
    when the ingest function handles it, then it is not a batch item failure (so it is never
    retried, bisected or dead-lettered), and nothing is counted or written for it."""
    record = kinesis_record(1, published_expiry_bytes())
    response = handler.lambda_handler({"Records": [record]}, LambdaContext())
    assert response == {"batchItemFailures": []}
    assert ddb.transactions == []  # not a tool call: no record, no dedupe marker, no usage


def test_a4_session_expired_is_decoded_as_a_typed_event_with_its_session() -> None:
    """A4: Given the published expiry bytes, when ingest decodes them, then it gets a
    session.expired event naming the session and carrying its deterministic id."""
    outcome = event_ingestor(RecordingDynamoDB(), "sessions").ingest_record(
        base64.b64encode(published_expiry_bytes("s9")).decode()
    )
    assert (outcome.event_id, outcome.counted, outcome.record_written) == ("session.expired#s9", False, False)
    assert outcome.event_type == "session.expired"


@pytest.mark.parametrize(
    "poison",
    [
        base64.b64encode(b"\x00 not json").decode(),
        _malformed_expiry(v=None),  # an expiry event must carry its schema version
        _malformed_expiry(v=99),  # from a producer newer than this consumer
        _malformed_expiry(session_id=None),
        _malformed_expiry(tool_calls="two"),
        _malformed_expiry(type="session.exploded"),  # an unknown type is refused, not skipped
        base64.b64encode(json.dumps({"type": 7, "v": 1}).encode()).decode(),
    ],
    ids=[
        "not-json",
        "expiry-no-version",
        "expiry-future-version",
        "expiry-no-session",
        "expiry-bad-field",
        "unknown-type",
        "non-string-type",
    ],
)
def test_a5_malformed_record_next_to_an_expiry_is_still_the_only_failure(
    handler: ModuleType, ddb: Any, poison: str, make_event: Callable[..., ToolCallEvent]
) -> None:
    """A5: Given a batch of a tool-call event, a session.expired event and a malformed record,
    when ingested, then only the malformed record is a batch item failure; the tool call is
    counted once and the expiry is acknowledged."""
    tool_call = make_event(session_id=None)  # no session partition: only usage is counted
    bad = kinesis_record(3, poison)
    batch = [kinesis_record(1, tool_call.to_bytes()), kinesis_record(2, published_expiry_bytes()), bad]
    response = handler.lambda_handler({"Records": batch}, LambdaContext())
    assert response == {"batchItemFailures": [{"itemIdentifier": bad["kinesis"]["sequenceNumber"]}]}
    assert len(ddb.transactions) == 1  # the batch's usage transaction, nothing for the expiry


def test_a5_malformed_expiry_raises_the_typed_poison_error() -> None:
    """A5: Given an expiry event without its version, when decoded, then PoisonRecordError."""
    with pytest.raises(PoisonRecordError):
        event_ingestor(RecordingDynamoDB(), "sessions").ingest_record(_malformed_expiry(v=None))
