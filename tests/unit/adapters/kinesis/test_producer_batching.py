"""K1 request sizing and K3 partition keys, against a zero-latency fake client."""

from __future__ import annotations

import asyncio

import pytest
from events_fakes import FakeKinesis, FakeSqs

from mcp_platform.adapters.kinesis.batching import (
    MAX_BYTES_PER_CALL,
    MAX_RECORD_BYTES,
    InvalidPartitionKeyError,
    RecordTooLargeError,
    partition_key_for,
)
from mcp_platform.adapters.kinesis.producer import EventProducer
from mcp_platform.adapters.sqs.dead_letters import DeadLetterQueue


def producer(kinesis: FakeKinesis, sqs: FakeSqs | None = None) -> EventProducer:
    dlq = DeadLetterQueue(sqs or FakeSqs(), "https://sqs.local/dlq", sleep=lambda s: None)
    return EventProducer(kinesis, "events", dlq, sleep=lambda s: None)


def test_k1_ten_thousand_small_events_go_in_calls_of_500(make_event):
    # Given 10,000 small events buffered
    kinesis = FakeKinesis()
    p = producer(kinesis)
    for _ in range(10_000):
        p.emit(make_event())
    # When flushed
    result = p.flush()
    # Then 20 PutRecords calls of exactly 500 records carry them all, in order
    assert [len(c) for c in kinesis.calls] == [500] * 20
    assert result.sent == 10_000 and result.put_calls == 20
    assert len(p) == 0


def test_k1_large_records_are_split_by_the_5_mb_call_limit():
    # Given 30 records of 400,000 bytes (12 fit in 5 MiB, 13 would not)
    kinesis = FakeKinesis()
    p = producer(kinesis)
    for i in range(30):
        p.add_record(b"x" * 400_000, f"key-{i}")
    # When flushed
    p.flush()
    # Then no call exceeds 5 MiB including partition keys, and none is needlessly small
    sizes = [sum(len(r["Data"]) + len(r["PartitionKey"]) for r in call) for call in kinesis.calls]
    assert all(size <= MAX_BYTES_PER_CALL for size in sizes)
    assert [len(c) for c in kinesis.calls] == [13, 13, 4]


def test_k1_oversized_record_is_refused_at_add_time_never_truncated():
    # Given a record whose data + partition key is one byte over 1 MiB
    p = producer(FakeKinesis())
    key = "session-1"
    # When added / Then refused with the typed error, and nothing is buffered
    with pytest.raises(RecordTooLargeError) as info:
        p.add_record(b"x" * (MAX_RECORD_BYTES - len(key) + 1), key)
    assert info.value.size == MAX_RECORD_BYTES + 1
    assert len(p) == 0
    # And exactly at the limit it is accepted whole
    p.add_record(b"x" * (MAX_RECORD_BYTES - len(key)), key)
    assert len(p) == 1


@pytest.mark.parametrize("key", ["", "k" * 257])
def test_k1_invalid_partition_key_is_refused(key):
    with pytest.raises(InvalidPartitionKeyError):
        producer(FakeKinesis()).add_record(b"{}", key)


def test_k3_partition_key_is_the_session_id_else_the_event_id(make_event):
    # Given events with and without a session
    with_session = make_event(session_id="sess-42")
    without = make_event(session_id=None)
    # Then the key is a server-minted high-cardinality id, never tool/principal/constant
    assert partition_key_for(with_session) == "sess-42"
    assert partition_key_for(without) == without.event_id
    assert partition_key_for(without) not in (without.tool, without.principal)


def test_flush_async_runs_the_blocking_flush_in_a_worker_thread(make_event):
    # Given buffered events; When flushed from an event loop; Then all are sent
    kinesis = FakeKinesis()
    p = producer(kinesis)
    for _ in range(3):
        p.emit(make_event())
    result = asyncio.run(p.flush_async())
    assert result.sent == 3 and len(kinesis.accepted) == 3
