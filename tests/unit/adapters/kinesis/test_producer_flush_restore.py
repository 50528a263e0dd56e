"""K2 "zero silent loss": an unexpected exception during flush loses no event.

Entries leave the buffer when a flush starts; whatever is neither sent nor dead-lettered when
an exception escapes (a bug, an unexpected client error) goes back to the front of the buffer,
and what was sent or dead-lettered is not sent again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from events_fakes import FakeKinesis, FakeSqs

from mcp_platform.adapters.kinesis.producer import EventProducer
from mcp_platform.adapters.sqs.dead_letters import DeadLetterError, DeadLetterQueue, FailedRecord


class Crashing(FakeKinesis):
    """Raises RuntimeError on the listed PutRecords calls (0-based), optionally adding a record
    to the producer first, as a concurrent request would."""

    def __init__(self, crash_on: set[int], rule: Any = None) -> None:
        super().__init__(rule)
        self.crash_on = crash_on
        self.during_crash: Any = None

    def put_records(self, Records: list[dict[str, Any]], **target: Any) -> dict[str, Any]:
        if len(self.calls) in self.crash_on:
            self.calls.append(list(Records))
            if self.during_crash:
                self.during_crash()
            raise RuntimeError("unexpected failure inside the client")
        return super().put_records(Records, **target)


class BrokenDlq(DeadLetterQueue):
    """A DLQ whose send fails in a way it does not translate into DeadLetterError."""

    def send(self, records: Sequence[FailedRecord]) -> None:
        raise RuntimeError("DLQ client bug")


def producer(kinesis: FakeKinesis, dlq: DeadLetterQueue | None = None) -> EventProducer:
    dlq = dlq or DeadLetterQueue(FakeSqs(), "https://sqs.local/dlq", sleep=lambda s: None)
    return EventProducer(kinesis, "events", dlq, sleep=lambda s: None, max_records_per_call=2)


def accepted_keys(kinesis: FakeKinesis) -> list[str]:
    return [r["PartitionKey"] for r in kinesis.accepted]


def test_k2_runtime_error_mid_flush_puts_unsent_entries_back_in_front() -> None:
    # Given five entries sent two per call, the second call crashing while a request adds "late"
    kinesis = Crashing(crash_on={1})
    p = producer(kinesis)
    for i in range(5):
        p.add_record(b"{}", f"k{i}")
    kinesis.during_crash = lambda: p.add_record(b"{}", "late")
    # When flushed / Then the error propagates
    with pytest.raises(RuntimeError, match="unexpected failure"):
        p.flush()
    # And the unsent entries are back, ahead of the later one; the sent batch is not
    assert accepted_keys(kinesis) == ["k0", "k1"]
    assert len(p) == 4
    # And the next flush sends each remaining event exactly once, in order
    kinesis.crash_on = set()
    p.flush()
    assert accepted_keys(kinesis) == ["k0", "k1", "k2", "k3", "k4", "late"]


def test_k2_crash_on_a_resend_keeps_only_the_entries_still_failing() -> None:
    # Given k1 throttled on the first call and the resend crashing
    kinesis = Crashing(
        crash_on={1}, rule=lambda call, pos, rec: "InternalFailure" if rec["PartitionKey"] == "k1" else None
    )
    p = producer(kinesis)
    for i in range(2):
        p.add_record(b"{}", f"k{i}")
    # When flushed
    with pytest.raises(RuntimeError):
        p.flush()
    # Then k0 (already accepted) is not restored, k1 is
    assert accepted_keys(kinesis) == ["k0"] and len(p) == 1
    kinesis.crash_on, kinesis.rule = set(), None
    p.flush()
    assert accepted_keys(kinesis) == ["k0", "k1"]


def test_k2_unexpected_dlq_error_keeps_the_failed_entries() -> None:
    # Given k0 always refused by Kinesis and a DLQ that fails with an unexpected error
    kinesis = FakeKinesis(lambda call, pos, rec: "InternalFailure" if rec["PartitionKey"] == "k0" else None)
    p = producer(kinesis, BrokenDlq(FakeSqs(), "https://sqs.local/dlq", sleep=lambda s: None))
    for i in range(2):
        p.add_record(b"{}", f"k{i}")
    # When flushed / Then the error propagates and only the undelivered k0 waits in the buffer
    with pytest.raises(RuntimeError, match="DLQ client bug"):
        p.flush()
    assert accepted_keys(kinesis) == ["k1"] and len(p) == 1


class RefusingSqs(FakeSqs):
    """Accepts every message but those whose partition key is listed (a partial batch failure)."""

    def __init__(self, refused_keys: set[str]) -> None:
        super().__init__()
        self.refused_keys = refused_keys

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(list(Entries))
        refused = [e for e in Entries if e["MessageAttributes"]["PartitionKey"]["StringValue"] in self.refused_keys]
        return {
            "Successful": [{"Id": e["Id"]} for e in Entries if e not in refused],
            "Failed": [{"Id": e["Id"], "Code": "KMS.Throttling", "Message": "no"} for e in refused],
        }


def test_k2_only_what_the_dlq_refused_goes_back_in_the_buffer() -> None:
    # Given Kinesis refusing k0..k2 and a DLQ that takes k0 and k2 but never k1
    kinesis = FakeKinesis(lambda call, pos, rec: "InternalFailure")
    sqs = RefusingSqs({"k1"})
    p = producer(kinesis, DeadLetterQueue(sqs, "https://sqs.local/dlq", sleep=lambda s: None))
    for i in range(3):
        p.add_record(b"{}", f"k{i}")
    # When flushed / Then the DLQ failure propagates
    with pytest.raises(DeadLetterError):
        p.flush()
    # And only k1 waits for the next flush: k0 and k2 are dead-lettered for good, never twice
    assert len(p) == 1
    kinesis.rule = None
    p.flush()
    assert accepted_keys(kinesis) == ["k1"]
