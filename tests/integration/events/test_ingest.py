"""Ingest function end to end on moto DynamoDB: idempotent records, exact counters, poison isolation.

Lambda events are built in the real Kinesis shape (eventSource aws:kinesis, base64 data,
sequenceNumber, partitionKey, eventID, eventSourceARN, ...) and go through the real handler
(partial batch responses from Powertools BatchProcessor, mcp_platform.bootstrap.batches).
"""

from __future__ import annotations

import base64
import importlib
import json
import time
from dataclasses import dataclass, replace

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.application.events.schema import ToolCallEvent

TABLE = "sessions"
STREAM_ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/tool-events"


@dataclass
class LambdaContext:
    function_name: str = "ingest"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:ingest"
    aws_request_id: str = "req-1"


@pytest.fixture
def handler(dynamodb, monkeypatch):
    dynamodb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": ts.PK, "KeyType": "HASH"}, {"AttributeName": ts.SK, "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": ts.PK, "AttributeType": "S"},
            {"AttributeName": ts.SK, "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    monkeypatch.setenv("SESSION_TABLE_NAME", TABLE)
    for session in ("sess-1", "sess-2"):  # records are written only for live sessions
        put_live_session(dynamodb, session)
    module = importlib.import_module("ingest_handler")
    return importlib.reload(module)  # module-scope objects built inside this test's moto


def put_live_session(dynamodb, session_id: str, *, ttl: int | None = None, status: str = ts.STATUS_ACTIVE) -> None:
    item = {
        ts.PK: {"S": ts.session_pk(session_id)},
        ts.SK: {"S": ts.METADATA_SK},
        ts.STATUS: {"S": status},
        ts.TTL: {"N": str(ttl if ttl is not None else int(time.time()) + 3600)},
        ts.VERSION: {"N": "1"},
        ts.OWNER: {"S": "alice"},
    }
    dynamodb.put_item(TableName=TABLE, Item=item)


def kinesis_record(seq: int, data: bytes | str, partition_key: str = "sess-1") -> dict:
    payload = data if isinstance(data, str) else base64.b64encode(data).decode()
    sequence = f"4959{seq:052d}"
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": partition_key,
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


def tool_event(i: int, session: str | None = "sess-1", status: str = "ok", tool: str = "echo") -> ToolCallEvent:
    return ToolCallEvent(
        event_id=f"call-{i}",
        principal="alice",
        tool=tool,
        status=status,
        started_at=f"2026-11-29T10:00:0{i}.000000Z",
        finished_at=f"2026-11-29T10:00:0{i}.250000Z",
        request_bytes=100 + i,
        response_bytes=1000,
        duration_ms=250.5,
        session_id=session,
    )


def batch(events: list[ToolCallEvent]) -> dict:
    return {"Records": [kinesis_record(i, e.to_bytes(), e.session_id or e.event_id) for i, e in enumerate(events)]}


def table_items(dynamodb) -> list[dict]:
    items = dynamodb.scan(TableName=TABLE)["Items"]
    return sorted(items, key=lambda item: (item[ts.PK]["S"], item[ts.SK]["S"]))


def usage(dynamodb, tool: str = "echo") -> dict:
    item = dynamodb.get_item(
        TableName=TABLE, Key={ts.PK: {"S": ts.usage_pk("alice")}, ts.SK: {"S": ts.usage_sk("2026-11-29", tool)}}
    )["Item"]
    names = (ts.USAGE_CALLS, ts.USAGE_ERRORS, ts.USAGE_REQUEST_BYTES, ts.USAGE_RESPONSE_BYTES, ts.USAGE_DURATION_MS)
    return {n: float(item[n]["N"]) for n in names}


def test_ingest_writes_records_and_counts_usage(handler, dynamodb):
    # Given two ok calls, one error call and one call without a session
    events = [tool_event(1), tool_event(2, status="error"), tool_event(3, session="sess-2"), tool_event(4, None)]
    # When the batch is ingested
    response = handler.lambda_handler(batch(events), LambdaContext())
    # Then no failures, one record per session call in the D1 shape, and exact counters
    assert response == {"batchItemFailures": []}
    record = dynamodb.get_item(
        TableName=TABLE,
        Key={ts.PK: {"S": "session#sess-1"}, ts.SK: {"S": ts.tool_record_sk(events[0].started_at, "call-1")}},
    )["Item"]
    assert record[ts.TOOL_CALL_ID]["S"] == "call-1" and record[ts.IS_ERROR]["BOOL"] is False
    records = [i for i in table_items(dynamodb) if i[ts.SK]["S"].startswith(ts.TOOL_RECORD_PREFIX)]
    assert len(records) == 3  # the session-less call has no session partition
    assert usage(dynamodb) == {
        "calls": 4,
        "errors": 1,
        "request_bytes": 410,
        "response_bytes": 4000,
        "duration_ms": 1002.0,
    }


def test_redelivered_batch_leaves_records_and_counters_unchanged(handler, dynamodb):
    # Given a batch already ingested
    events = [tool_event(i, status="error" if i == 2 else "ok") for i in range(1, 5)]
    handler.lambda_handler(batch(events), LambdaContext())
    before = table_items(dynamodb)
    # When Lambda delivers the same batch again (retry, bisect, replay)
    response = handler.lambda_handler(batch(events), LambdaContext())
    # Then it succeeds and the table is byte-for-byte the same: no record rewritten, no count doubled
    assert response == {"batchItemFailures": []}
    assert table_items(dynamodb) == before
    assert usage(dynamodb)["calls"] == 4


def test_partially_redelivered_batch_counts_only_the_new_events(handler, dynamodb):
    handler.lambda_handler(batch([tool_event(1)]), LambdaContext())
    handler.lambda_handler(batch([tool_event(1), tool_event(2)]), LambdaContext())
    assert usage(dynamodb)["calls"] == 2


def test_record_already_committed_by_the_endpoint_is_kept_and_counted_once(handler, dynamodb):
    # Given the endpoint's commit already wrote the tool-call record (with arguments and result)
    event = tool_event(1)
    key = {ts.PK: {"S": "session#sess-1"}, ts.SK: {"S": ts.tool_record_sk(event.started_at, event.event_id)}}
    committed = key | {
        ts.TOOL_CALL_ID: {"S": event.event_id},
        ts.ARGUMENTS: {"M": {"x": {"N": "1"}}},
        ts.RESULT: {"S": "done"},
    }
    dynamodb.put_item(TableName=TABLE, Item=committed)
    # When the event is ingested
    response = handler.lambda_handler(batch([event]), LambdaContext())
    # Then the transaction did not fail, the committed record is untouched, usage counted once
    assert response == {"batchItemFailures": []}
    assert dynamodb.get_item(TableName=TABLE, Key=key)["Item"] == committed
    assert usage(dynamodb)["calls"] == 1


@pytest.mark.parametrize(
    "poison",
    [
        "!!! not base64 !!!",
        base64.b64encode(b'{"v": 1, "event_id": "call-x", truncated').decode(),
        base64.b64encode(json.dumps({"v": 1, "event_id": "call-x", "status": "maybe"}).encode()).decode(),
    ],
    ids=["bad-base64", "bad-json", "bad-schema"],
)
def test_poison_record_is_the_only_batch_item_failure(handler, dynamodb, poison):
    # Given a batch whose middle record cannot be decoded or validated
    good = batch([tool_event(1), tool_event(2)])["Records"]
    bad = kinesis_record(1, poison)
    first, after = good[0], kinesis_record(2, tool_event(2).to_bytes())
    # When ingested
    response = handler.lambda_handler({"Records": [first, bad, after]}, LambdaContext())
    # Then only the poison record is reported, by its sequence number; the record before it is
    # counted, none after it (the mapping retries from the failure)
    assert response == {"batchItemFailures": [{"itemIdentifier": bad["kinesis"]["sequenceNumber"]}]}
    assert usage(dynamodb)["calls"] == 1
    # And when the mapping retries from it, it fails alone as a whole (bisected, then dead-lettered)
    with pytest.raises(BatchProcessingError):
        handler.lambda_handler({"Records": [bad, after]}, LambdaContext())
    # And the record after it, delivered once the poison one is dead-lettered, is counted
    assert handler.lambda_handler({"Records": [after]}, LambdaContext()) == {"batchItemFailures": []}
    assert usage(dynamodb)["calls"] == 2


def test_k7_dedupe_marker_outlives_the_configured_stream_retention(handler, dynamodb, monkeypatch):
    # Given a stream retaining records for a year (K7 allows up to 8760 h)
    monkeypatch.setenv("EVENT_RETENTION_HOURS", "8760")
    module = importlib.reload(handler)
    # When a committed call's event is ingested (the outbox relay may put it on the stream twice)
    before = int(time.time())
    module.lambda_handler(batch([replace(tool_event(1), recorded=True)]), LambdaContext())
    # Then its dedupe marker lives past the retention plus a day, so a replay from
    # TRIM_HORIZON of a year-old record is still recognised as a duplicate
    marker = dynamodb.get_item(
        TableName=TABLE, Key={ts.PK: {"S": ts.event_dedupe_pk("call-1")}, ts.SK: {"S": ts.EVENT_DEDUPE_SK}}
    )["Item"]
    assert int(marker[ts.TTL]["N"]) >= before + (8760 + 24) * 3600


CALL_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALL_SPAN = "00f067aa0ba902b7"


def test_with_span_export_on_each_traced_event_is_a_span_of_its_calls_trace(handler, monkeypatch):
    # Given span export on (the stack sets the collector's address), and a traced call's event
    # beside an untraced one
    from mcp_platform.config import EnvVars
    from tests.support.otlp_receiver import otlp_receiver

    with otlp_receiver() as receiver:
        monkeypatch.setenv(EnvVars.OTLP_TRACES_ENDPOINT, receiver.url)
        handler = importlib.reload(handler)
        traced = replace(tool_event(1), trace_id=CALL_TRACE, span_id=CALL_SPAN)
        # When the batch is ingested
        assert handler.lambda_handler(batch([traced, tool_event(2)]), LambdaContext()) == {"batchItemFailures": []}
        # Then one span was exported before the handler returned: the traced event's ingest, a
        # child of the call's span, naming its tool
        (span,) = receiver.spans()
    assert span["name"] == "ingest" and span["kind"] == 5
    assert (span["traceId"], span["parentSpanId"]) == (CALL_TRACE, CALL_SPAN)
    attributes = {a["key"]: a["value"]["stringValue"] for a in span["attributes"]}
    assert attributes == {"messaging.message.id": "call-1", "mcp.event.type": "tool.call", "gen_ai.tool.name": "echo"}
    assert span["resource"]["service.name"] == {"stringValue": "mcp-platform"}
    monkeypatch.delenv(EnvVars.OTLP_TRACES_ENDPOINT)
    assert importlib.reload(handler).spans is None  # off again: no recorder
