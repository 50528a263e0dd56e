"""Partial batch responses of the stream processors (A1, A5): a failing record is reported alone,
a batch where every record failed fails the invocation, and each record runs in its own trace."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcp_platform.bootstrap.stream_batch import (
    BatchFailed,
    Record,
    dynamodb_sequence_number,
    kinesis_sequence_number,
    process_batch,
)
from mcp_platform.protocol import trace_context


def kinesis(sequence: str, data: str) -> dict[str, Any]:
    return {"kinesis": {"sequenceNumber": sequence, "data": data}}


def fail_on_poison(record: Record) -> None:
    if record["kinesis"]["data"] == "poison":
        raise ValueError("poison record")


def test_only_the_failing_records_are_reported_and_the_rest_are_handled() -> None:
    # Given a batch with one poison record between two good ones
    handled: list[str] = []

    def handle(record: Record) -> None:
        fail_on_poison(record)
        handled.append(record["kinesis"]["sequenceNumber"])

    event = {"Records": [kinesis("1", "a"), kinesis("2", "poison"), kinesis("3", "b")]}
    # When the batch is processed
    response = process_batch(event, handle, identify=kinesis_sequence_number)
    # Then the poison record alone is a batch item failure, and the records after it were handled
    assert response == {"batchItemFailures": [{"itemIdentifier": "2"}]}
    assert handled == ["1", "3"]


def test_a_failure_is_logged_with_its_sequence_number_and_exception(caplog: pytest.LogCaptureFixture) -> None:
    event = {"Records": [kinesis("1", "a"), kinesis("7", "poison")]}
    with caplog.at_level(logging.ERROR, logger="mcp_platform.bootstrap.stream_batch"):
        process_batch(event, fail_on_poison, identify=kinesis_sequence_number)
    (logged,) = caplog.records
    assert getattr(logged, "sequence_number", None) == "7"
    assert logged.exc_info is not None and "poison record" in str(logged.exc_info[1])


def test_a_batch_where_every_record_failed_fails_the_invocation() -> None:
    # Then the mapping sees a function error (retry, bisect), as with Powertools' batch utility
    event = {"Records": [{"dynamodb": {"SequenceNumber": "10"}}, {"dynamodb": {"SequenceNumber": "11"}}]}

    def broken(record: Record) -> None:
        raise RuntimeError("table unreachable")

    with pytest.raises(BatchFailed, match="all 2 records"):
        process_batch(event, broken, identify=dynamodb_sequence_number)


def test_an_empty_batch_is_a_success() -> None:
    assert process_batch({"Records": []}, fail_on_poison, identify=kinesis_sequence_number) == {"batchItemFailures": []}


def test_each_record_runs_in_a_trace_scope_of_its_own() -> None:
    # Given a handler that activates its record's span (as ingest does once it decoded the event)
    seen: list[str | None] = []

    def handle(record: Record) -> None:
        current = trace_context.current()
        seen.append(current.trace_id if current is not None else None)
        if record["kinesis"]["data"] == "traced":
            trace_context.activate(trace_context.start())

    event = {"Records": [kinesis("1", "traced"), kinesis("2", "plain")]}
    process_batch(event, handle, identify=kinesis_sequence_number)
    # Then the second record does not inherit the first one's span, nor does the caller
    assert seen == [None, None]
    assert trace_context.current() is None
