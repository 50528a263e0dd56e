"""K4 on moto: ExpiredIteratorException injected mid-read, and recent events of one session."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from mcp_platform.adapters.kinesis.audit_publisher import KinesisEventPublisher
from mcp_platform.adapters.kinesis.producer import EventProducer
from mcp_platform.adapters.kinesis.recent import recent_session_events
from mcp_platform.adapters.kinesis.shard_reader import ReaderLimits, ShardReader, StartPosition
from mcp_platform.adapters.sqs.dead_letters import DeadLetterQueue
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.application.events.stream_events import SessionExpiredEvent
from tests.support.kinesis import make_stream


class FakeClock:
    """Makes the 5 calls/s limiter and empty-poll backoff instantaneous but still observable."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class ExpireGetRecords:
    """botocore before-call hook: the n-th GetRecords answers ExpiredIteratorException."""

    def __init__(self, client, on_calls: set[int]) -> None:
        self.calls = 0
        self.on_calls = on_calls
        self.fired = 0
        client.meta.events.register("before-call.kinesis.GetRecords", self)

    def __call__(self, **kwargs):
        self.calls += 1
        if self.calls not in self.on_calls:
            return None
        self.fired += 1
        error = {
            "Error": {"Code": "ExpiredIteratorException", "Message": "Iterator expired"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }
        return SimpleNamespace(status_code=400, headers={}), error


def event(i: int, session: str) -> ToolCallEvent:
    return ToolCallEvent(
        event_id=f"call-{i:04d}",
        principal="p",
        tool="echo",
        status="ok",
        started_at=f"2026-11-29T10:00:{i % 60:02d}.{i:06d}Z",
        finished_at="2026-11-29T11:00:00.000000Z",
        request_bytes=1,
        response_bytes=1,
        duration_ms=1,
        session_id=session,
    )


def publish(kinesis, sqs, stream: str, events: list[ToolCallEvent]) -> None:
    url = sqs.create_queue(QueueName="dlq")["QueueUrl"]
    producer = EventProducer(kinesis, stream, DeadLetterQueue(sqs, url), sleep=lambda s: None)
    for e in events:
        producer.emit(e)
    producer.flush()


def test_k4_expired_iterator_mid_read_loses_and_repeats_nothing(kinesis, sqs):
    # Given 300 events on one shard, read 40 per GetRecords, with the 3rd and 6th calls expiring
    stream = make_stream(kinesis, "tool-events", 1)
    events = [event(i, "sess-a") for i in range(300)]
    publish(kinesis, sqs, stream, events)
    expiry = ExpireGetRecords(kinesis, on_calls={3, 6})
    clock = FakeClock()
    reader = ShardReader(
        kinesis, stream, limits=ReaderLimits(max_records_per_call=40), monotonic=clock, sleep=clock.sleep
    )
    # When the whole stream is read
    got = [ToolCallEvent.from_bytes(r["Data"]).event_id for r in reader.read_stream(StartPosition.trim_horizon())]
    # Then both expiries happened and every event came back exactly once, in stream order
    assert expiry.fired == 2
    assert got == [e.event_id for e in events]
    assert reader.iterator_requests == 3  # the first one plus one per expiry
    # And the rate limit held: ≥ 200 ms of (fake) time between calls on the shard
    assert clock.now >= 0.2 * (reader.get_records_calls - 1) - 1e-9


def test_k4_recent_events_of_one_session_read_only_its_shard(kinesis, sqs):
    # Given events of 20 sessions spread over 4 shards
    stream = make_stream(kinesis, "tool-events", 4)
    events = [event(i, f"sess-{i % 20}") for i in range(400)]
    publish(kinesis, sqs, stream, events)
    clock = FakeClock()
    reader = ShardReader(kinesis, stream, monotonic=clock, sleep=clock.sleep)
    # When the recent events of one session are asked for, bounded to 10
    since = datetime.now(UTC) - timedelta(minutes=5)
    recent = recent_session_events(reader, "sess-7", since=since, max_events=10, monotonic=clock)
    # Then only that session's events come back: the newest 10 of its 20, ordered by started_at
    ours = [e for e in events if e.session_id == "sess-7"]
    assert {e.event_id for e in recent.events} == {e.event_id for e in ours[-10:]}
    assert [e.started_at for e in recent.events] == sorted(e.started_at for e in recent.events)
    assert recent.truncated and recent.skipped_invalid == 0
    # And one shard was read (the one owning MD5("sess-7")), not all four
    assert reader.iterator_requests == 1


def test_a4_session_expired_event_on_the_session_key_is_not_an_undecodable_record(kinesis, sqs):
    """A4/K4: Given a session's tool-call events and then its session.expired event (published by
    the audit function on the same partition key), when its recent events are read, then the
    tool calls come back and the expiry event is neither returned nor counted as invalid."""
    stream = make_stream(kinesis, "tool-events", 1)
    events = [event(i, "sess-x") for i in range(3)]
    publish(kinesis, sqs, stream, events)
    expired = SessionExpiredEvent(
        session_id="sess-x", sequence_number="4960", removed_at="2026-11-29T12:00:00Z", tool_calls=3
    )
    KinesisEventPublisher(kinesis, stream).publish(expired.to_dict())
    clock = FakeClock()
    reader = ShardReader(kinesis, stream, monotonic=clock, sleep=clock.sleep)
    recent = recent_session_events(reader, "sess-x", since=datetime.now(UTC) - timedelta(minutes=5), monotonic=clock)
    assert [e.event_id for e in recent.events] == [e.event_id for e in events]
    assert recent.skipped_invalid == 0
