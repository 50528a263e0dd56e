"""K2 partial failures: only failed entries are resent, with backoff, then dead-lettered."""

from __future__ import annotations

import json

import pytest
from events_fakes import FakeKinesis, FakeSqs

from mcp_platform.adapters.kinesis.producer import EventProducer
from mcp_platform.adapters.sqs.dead_letters import DeadLetterError, DeadLetterQueue


def build(kinesis, sqs=None, sleeps=None, rng=lambda: 0.5):
    sqs = sqs or FakeSqs()
    dlq = DeadLetterQueue(sqs, "https://sqs.local/dlq", stream_name="events", sleep=lambda s: None)
    sleep = sleeps.append if sleeps is not None else (lambda s: None)
    return EventProducer(kinesis, "events", dlq, sleep=sleep, rng=rng), sqs


def keys(call):
    return [r["PartitionKey"] for r in call]


def test_k2_only_failed_entries_are_resent_in_original_order():
    # Given entries 1, 3 and 4 throttled on the first call only
    def rule(call, pos, rec):
        return "ProvisionedThroughputExceededException" if call == 0 and pos in (1, 3, 4) else None

    kinesis = FakeKinesis(rule)
    p, sqs = build(kinesis)
    for i in range(6):
        p.add_record(json.dumps({"i": i}).encode(), f"k{i}")
    # When flushed
    result = p.flush()
    # Then the second call holds exactly the failed entries, in their original relative order
    assert keys(kinesis.calls[1]) == ["k1", "k3", "k4"]
    assert result.sent == 6 and result.dead_lettered == 0 and sqs.calls == []
    # And each event was accepted exactly once
    assert sorted(keys(kinesis.accepted)) == [f"k{i}" for i in range(6)]


def test_k2_backoff_is_100ms_times_2_pow_retry_with_jitter():
    # Given an entry that always fails and a recording sleep
    kinesis = FakeKinesis(lambda call, pos, rec: "InternalFailure")
    sleeps: list[float] = []
    p, _ = build(kinesis, sleeps=sleeps, rng=lambda: 1.0)
    p.add_record(b"{}", "k")
    p.flush()
    # Then two resends after 100 ms and 200 ms (upper jitter bound), i.e. 3 attempts in all
    assert sleeps == pytest.approx([0.1, 0.2])
    assert len(kinesis.calls) == 3
    # And the jitter stays within [d/2, d]
    low, _ = build(kinesis, rng=lambda: 0.0)
    assert low.backoff_delay(2) == pytest.approx(0.2)


def test_k2_exhausted_entries_reach_the_dlq_with_their_error_code():
    # Given one entry that always fails and one that always succeeds
    def rule(call, pos, rec):
        return "ProvisionedThroughputExceededException" if rec["PartitionKey"] == "bad" else None

    kinesis = FakeKinesis(rule)
    p, sqs = build(kinesis)
    p.add_record(b'{"event_id":"e-bad"}', "bad")
    p.add_record(b'{"event_id":"e-ok"}', "good")
    # When flushed
    result = p.flush()
    # Then the failing one is dead-lettered with its code, body verbatim; nothing else is
    assert result.dead_lettered == 1 and result.error_codes == {"ProvisionedThroughputExceededException": 1}
    [message] = sqs.messages
    assert message["MessageBody"] == '{"event_id":"e-bad"}'
    attrs = message["MessageAttributes"]
    assert attrs["ErrorCode"]["StringValue"] == "ProvisionedThroughputExceededException"
    assert attrs["PartitionKey"]["StringValue"] == "bad"
    assert attrs["Attempts"]["StringValue"] == "3"


def test_k2_non_retryable_call_error_goes_to_the_dlq_without_retrying():
    # Given a stream that does not exist
    kinesis = FakeKinesis(call_error="ResourceNotFoundException")
    p, sqs = build(kinesis)
    p.add_record(b"{}", "k")
    p.flush()
    # Then one call, and the record is in the DLQ with that code
    assert len(kinesis.calls) == 1
    assert sqs.messages[0]["MessageAttributes"]["ErrorCode"]["StringValue"] == "ResourceNotFoundException"


def test_k2_result_without_sequence_number_is_never_assumed_delivered():
    # Given a response that reports FailedRecordCount 0 but lacks a SequenceNumber
    class Lying(FakeKinesis):
        def put_records(self, Records, **target):
            self.calls.append(Records)
            return {"FailedRecordCount": 0, "Records": [{} for _ in Records]}

    p, sqs = build(Lying())
    p.add_record(b"{}", "k")
    p.flush()
    # Then it is retried and finally dead-lettered, not counted as sent
    assert sqs.messages[0]["MessageAttributes"]["ErrorCode"]["StringValue"] == "MissingSequenceNumber"


def test_k2_dlq_sends_at_most_10_messages_per_call():
    kinesis = FakeKinesis(lambda call, pos, rec: "InternalFailure")
    p, sqs = build(kinesis)
    for i in range(25):
        p.add_record(b"{}", f"k{i}")
    p.flush()
    assert [len(c) for c in sqs.calls] == [10, 10, 5]


def test_k2_dlq_failure_raises_and_keeps_the_records():
    # Given Kinesis and the DLQ both refusing everything
    kinesis = FakeKinesis(lambda call, pos, rec: "InternalFailure")
    p, _ = build(kinesis, sqs=FakeSqs(fail_ids=True))
    for i in range(3):
        p.add_record(b"{}", f"k{i}")
    # When flushed / Then the failure is raised with the unsent records attached
    with pytest.raises(DeadLetterError) as info:
        p.flush()
    assert len(info.value.unsent) == 3
    # And the records are back in the buffer for the next flush: nothing dropped
    assert len(p) == 3
