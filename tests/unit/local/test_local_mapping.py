"""Event source mapping semantics of the local platform (A1, A5), with fake handlers.

No AWS: records are Lambda-shaped Kinesis records, the handler is a fake, the DLQ a list.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from local.failure_record import RECORD_AGE_EXCEEDED, RETRIES_EXHAUSTED
from local.mapping import EventSourceMapping, MappingConfig
from mcp_platform.ops.lambda_records import SourceKind

NOW = 1_800_000_000.0
POISON = b"poison"


def record(seq: int, data: bytes = b"{}", arrival: float = NOW - 1) -> dict[str, Any]:
    return {
        "kinesis": {
            "sequenceNumber": str(seq),
            "partitionKey": f"pk-{seq}",
            "data": base64.b64encode(data).decode(),
            "approximateArrivalTimestamp": arrival,
        },
        "eventSourceARN": "arn:aws:kinesis:us-east-1:123456789012:stream/s/consumer/ingest:1",
    }


class FakeHandler:
    """Records every invocation; fails the way it is told to."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.calls: list[list[str]] = []

    def __call__(self, event: dict[str, Any]) -> Any:
        seqs = [r["kinesis"]["sequenceNumber"] for r in event["Records"]]
        self.calls.append(seqs)
        poison = [
            r["kinesis"]["sequenceNumber"] for r in event["Records"] if base64.b64decode(r["kinesis"]["data"]) == POISON
        ]
        if self.mode == "partial" and poison:
            return {"batchItemFailures": [{"itemIdentifier": s} for s in poison]}
        if self.mode == "raise" and poison:
            raise ValueError("poison record")
        if self.mode == "invalid":
            return {"batchItemFailures": [{"itemIdentifier": ""}]}
        return None


def new_dlq() -> list[dict[str, Any]]:
    return []


def mapping(handler: FakeHandler, dlq: list[dict[str, Any]], **overrides: Any) -> EventSourceMapping:
    settings: dict[str, Any] = {
        "kind": SourceKind.KINESIS,
        "function_arn": "arn:aws:lambda:us-east-1:123456789012:function:ingest",
        "stream_arn": "arn:aws:kinesis:us-east-1:123456789012:stream/s",
        "batch_size": 100,
        "max_retries": 3,
        "bisect_on_error": True,
        "report_batch_item_failures": True,
        "max_record_age_s": 21600,
    }
    settings.update(overrides)
    return EventSourceMapping(MappingConfig(**settings), handler, dlq.append, clock=lambda: NOW)


def test_success_invokes_once_and_sends_nothing() -> None:
    """Given a healthy batch, when it is processed, then the handler runs once and the DLQ stays empty."""
    handler, dlq = FakeHandler(), new_dlq()
    outcome = mapping(handler, dlq).process([record(1), record(2), record(3)], "shardId-0")
    assert handler.calls == [["1", "2", "3"]]
    assert outcome.invocations == 1 and dlq == []


def test_partial_failure_retries_from_lowest_failed_record_then_dead_letters() -> None:
    """A1: Given a handler reporting record 3 as a batch item failure, when the batch is processed,
    then records 1-2 are checkpointed, 3.. is retried max_retries times, then sent to the DLQ."""
    handler, dlq = FakeHandler("partial"), new_dlq()
    batch = [record(1), record(2), record(3, POISON), record(4)]
    mapping(handler, dlq).process(batch, "shardId-0")
    assert handler.calls == [["1", "2", "3", "4"]] + [["3", "4"]] * 3
    assert len(dlq) == 1
    message = dlq[0]
    assert message["requestContext"]["condition"] == RETRIES_EXHAUSTED
    assert message["requestContext"]["approximateInvokeCount"] == 4
    assert "functionError" not in message["responseContext"]
    info = message["KinesisBatchInfo"]
    assert (info["startSequenceNumber"], info["endSequenceNumber"], info["batchSize"]) == ("3", "4", 2)
    assert info["shardId"] == "shardId-0" and info["streamArn"].endswith(":stream/s")


def test_function_error_bisects_until_the_poison_record_is_isolated() -> None:
    """A5: Given a handler that raises on one record, when the batch is processed, then the batch
    is bisected, every healthy record succeeds, and only the poison record reaches the DLQ after
    its retries."""
    handler, dlq = FakeHandler("raise"), new_dlq()
    batch = [record(1), record(2), record(3, POISON), record(4)]
    mapping(handler, dlq).process(batch, "shardId-0")
    assert handler.calls[:3] == [["1", "2", "3", "4"], ["1", "2"], ["3", "4"]]
    assert handler.calls[3:] == [["3"]] * 4 + [["4"]]
    assert len(dlq) == 1
    info = dlq[0]["KinesisBatchInfo"]
    assert (info["startSequenceNumber"], info["endSequenceNumber"]) == ("3", "3")
    assert dlq[0]["responseContext"]["functionError"] == "Unhandled"


def test_function_error_without_bisect_retries_the_whole_batch() -> None:
    """Given bisect off, when the handler raises, then the whole batch is retried and dead-lettered."""
    handler, dlq = FakeHandler("raise"), new_dlq()
    mapping(handler, dlq, bisect_on_error=False, max_retries=1).process([record(1), record(2, POISON)], "s")
    assert handler.calls == [["1", "2"]] * 2
    assert dlq[0]["KinesisBatchInfo"]["batchSize"] == 2


def test_invalid_item_identifier_fails_the_whole_batch() -> None:
    """Given an empty itemIdentifier, when the batch is processed, then AWS's rule applies: the
    whole batch counts as failed and is retried."""
    handler, dlq = FakeHandler("invalid"), new_dlq()
    mapping(handler, dlq, max_retries=2).process([record(1), record(2)], "s")
    assert handler.calls == [["1", "2"]] * 3
    assert dlq[0]["KinesisBatchInfo"]["startSequenceNumber"] == "1"


def test_records_past_max_age_go_to_the_dlq_without_an_invocation() -> None:
    """A1 bounded record age: Given a record older than MaximumRecordAge, when the batch is
    processed, then it is dead-lettered as RecordAgeExceeded and only the fresh one is invoked."""
    handler, dlq = FakeHandler(), new_dlq()
    mapping(handler, dlq, max_record_age_s=60).process([record(1, arrival=NOW - 61), record(2)], "s")
    assert handler.calls == [["2"]]
    assert dlq[0]["requestContext"]["condition"] == RECORD_AGE_EXCEEDED


def test_a_dlq_that_refuses_the_message_raises_so_the_checkpoint_stays() -> None:
    """Given a failing DLQ, when records are exhausted, then process() raises (nothing silently lost)."""

    def refuse(_message: dict[str, Any]) -> None:
        raise RuntimeError("sqs down")

    config = mapping(FakeHandler(), []).config
    broken = EventSourceMapping(config, FakeHandler("raise"), refuse, clock=lambda: NOW)
    with pytest.raises(RuntimeError, match="sqs down"):
        broken.process([record(1, POISON)], "s")
