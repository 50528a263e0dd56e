"""Partial batch responses of the event functions on Powertools' BatchProcessor (A1, A5): a
failing record is reported alone, a stream batch where every record failed fails the invocation,
each record runs in its own trace, and every invocation counts its records and failures."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from aws_lambda_powertools.metrics import EphemeralMetrics
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.data_classes.kinesis_stream_event import KinesisStreamRecord

from mcp_platform.application.metrics import RECORDS_CONSUMED, RECORDS_FAILED
from mcp_platform.bootstrap.batches import (
    dynamodb_sequence_number,
    kinesis_sequence_number,
    kinesis_shard,
    process_batch,
    traced_records,
)
from mcp_platform.protocol import trace_context


def kinesis(sequence: str, data: str) -> dict[str, Any]:
    return {"eventSource": "aws:kinesis", "kinesis": {"sequenceNumber": sequence, "data": data}}


def fail_on_poison(record: KinesisStreamRecord) -> None:
    if record.kinesis.data == "poison":
        raise ValueError("poison record")


def kinesis_batch(event: dict[str, Any], handle: Any, metrics: EphemeralMetrics | None = None) -> Any:
    processor = BatchProcessor(event_type=EventType.KinesisDataStreams)
    handler = traced_records(handle, identify=kinesis_sequence_number)
    return process_batch(event, None, processor=processor, record_handler=handler, metrics=metrics)


def test_only_the_failing_records_are_reported_and_the_rest_are_handled() -> None:
    # Given a batch with one poison record between two good ones
    handled: list[str] = []

    def handle(record: KinesisStreamRecord) -> None:
        fail_on_poison(record)
        handled.append(record.kinesis.sequence_number)

    event = {"Records": [kinesis("1", "a"), kinesis("2", "poison"), kinesis("3", "b")]}
    # When the batch is processed
    response = kinesis_batch(event, handle)
    # Then the poison record alone is a batch item failure, and the records after it were handled
    assert response == {"batchItemFailures": [{"itemIdentifier": "2"}]}
    assert handled == ["1", "3"]


def test_a_failure_is_logged_with_its_sequence_number_and_exception(caplog: pytest.LogCaptureFixture) -> None:
    # Given a batch whose second record is poison
    event = {"Records": [kinesis("1", "a"), kinesis("7", "poison")]}
    # When it is processed
    with caplog.at_level(logging.ERROR, logger="mcp_platform.bootstrap.batches"):
        kinesis_batch(event, fail_on_poison)
    # Then the failure is logged once, with its sequence number and its exception
    (logged,) = [r for r in caplog.records if r.name == "mcp_platform.bootstrap.batches"]
    assert getattr(logged, "sequence_number", None) == "7"
    assert logged.exc_info is not None and "poison record" in str(logged.exc_info[1])


def test_a_stream_batch_where_every_record_failed_fails_the_invocation() -> None:
    # Given a DynamoDB Streams batch whose every record fails
    event = {
        "Records": [
            {"eventSource": "aws:dynamodb", "dynamodb": {"SequenceNumber": "10"}},
            {"eventSource": "aws:dynamodb", "dynamodb": {"SequenceNumber": "11"}},
        ]
    }

    def broken(record: DynamoDBRecord) -> None:
        raise RuntimeError("table unreachable")

    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
    handler = traced_records(broken, identify=dynamodb_sequence_number)
    # Then the mapping sees a function error (retry, bisect)
    with pytest.raises(BatchProcessingError, match="All records failed"):
        process_batch(event, None, processor=processor, record_handler=handler)


def test_an_empty_batch_is_a_success() -> None:
    assert kinesis_batch({"Records": []}, fail_on_poison) == {"batchItemFailures": []}


def test_each_record_runs_in_a_trace_scope_of_its_own() -> None:
    # Given a handler that activates its record's span (as ingest does once it decoded the event)
    seen: list[str | None] = []

    def handle(record: KinesisStreamRecord) -> None:
        current = trace_context.current()
        seen.append(current.trace_id if current is not None else None)
        if record.kinesis.data == "traced":
            trace_context.activate(trace_context.start())

    kinesis_batch({"Records": [kinesis("1", "traced"), kinesis("2", "plain")]}, handle)
    # Then the second record does not inherit the first one's span, nor does the caller
    assert seen == [None, None]
    assert trace_context.current() is None


def test_every_invocation_counts_its_records_and_failures() -> None:
    # Given the function's metric set
    metrics = EphemeralMetrics(namespace="McpPlatform", service="mcp-ingest")
    # When a batch of three with one poison record is processed
    kinesis_batch({"Records": [kinesis("1", "a"), kinesis("2", "poison"), kinesis("3", "b")]}, fail_on_poison, metrics)
    # Then the metric set holds the three records and the one failure
    emf = metrics.serialize_metric_set()
    assert (emf[RECORDS_CONSUMED], emf[RECORDS_FAILED]) == ([3.0], [1.0])  # type: ignore[literal-required]


def test_a_kinesis_record_names_its_stream_and_shard_through_a_consumer_or_not() -> None:
    stream = "arn:aws:kinesis:us-east-1:123456789012:stream/tool-events"
    for source in (stream, f"{stream}/consumer/ingest:1700000000"):
        record = KinesisStreamRecord({"eventSourceARN": source, "eventID": "shardId-000000000001:4959"})
        assert kinesis_shard(record) == "tool-events/shardId-000000000001"
