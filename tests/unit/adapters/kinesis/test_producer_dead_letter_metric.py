"""The producer counts what it dead-letters: one EMF line per flush that sent records to the DLQ,
its value the number of records the DLQ took; nothing when every record reached the stream."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from events_fakes import FakeKinesis, FakeSqs

from mcp_platform.adapters.kinesis.producer import EventProducer
from mcp_platform.adapters.sqs.dead_letters import DeadLetterError, DeadLetterQueue
from mcp_platform.application.metrics import ERROR_TYPE, EVENTS_DEAD_LETTERED, MetricsWriter


def counting_producer(kinesis: FakeKinesis, sqs: FakeSqs | None = None) -> tuple[EventProducer, io.StringIO]:
    stream = io.StringIO()
    dlq = DeadLetterQueue(sqs or FakeSqs(), "https://sqs.local/dlq", stream_name="events", sleep=lambda s: None)
    metrics = MetricsWriter("McpPlatform", "mcp-endpoint", stream)
    return EventProducer(kinesis, "events", dlq, sleep=lambda s: None, metrics=metrics), stream


def dead_lettered(stream: io.StringIO) -> list[dict[str, Any]]:
    return [line for line in map(json.loads, stream.getvalue().splitlines()) if EVENTS_DEAD_LETTERED in line]


def test_a_flush_that_dead_letters_counts_its_records_once() -> None:
    # Given two of three records Kinesis refuses on every attempt
    def rule(call: int, pos: int, record: dict[str, Any]) -> str | None:
        return "ProvisionedThroughputExceededException" if record["PartitionKey"] != "good" else None

    producer, stream = counting_producer(FakeKinesis(rule))
    for key in ("bad-1", "good", "bad-2"):
        producer.add_record(b"{}", key)
    # When flushed (three attempts, then the DLQ)
    assert producer.flush().dead_lettered == 2
    # Then one line counts both, overall for the service, with the Kinesis error code as a property
    (line,) = dead_lettered(stream)
    assert line[EVENTS_DEAD_LETTERED] == 2 and line[ERROR_TYPE] == "ProvisionedThroughputExceededException"
    directive = line["_aws"]["CloudWatchMetrics"][0]
    assert directive["Dimensions"] == [["service"]]
    assert directive["Metrics"] == [{"Name": EVENTS_DEAD_LETTERED, "Unit": "Count"}]


def test_a_flush_whose_records_all_land_counts_nothing() -> None:
    # Given records refused once and accepted on the resend
    producer, stream = counting_producer(FakeKinesis(lambda call, pos, rec: "InternalFailure" if call == 0 else None))
    for i in range(3):
        producer.add_record(b"{}", f"k{i}")
    # When flushed / Then all were sent and no line was written
    assert producer.flush().sent == 3
    assert stream.getvalue() == ""


def test_records_the_dlq_refused_are_not_counted_as_dead_lettered() -> None:
    # Given Kinesis and the DLQ both refusing everything
    producer, stream = counting_producer(FakeKinesis(lambda call, pos, rec: "InternalFailure"), FakeSqs(fail_ids=True))
    producer.add_record(b"{}", "k")
    # When flushed / Then the records stay buffered for the next flush, and nothing was counted
    with pytest.raises(DeadLetterError):
        producer.flush()
    assert len(producer) == 1 and dead_lettered(stream) == []
