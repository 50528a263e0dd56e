"""K4 shard reader recovery: an iterator expiring before the first record of a LATEST read,
and GetRecords throttling (the shard's read quota is shared with every other consumer)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from mcp_platform.adapters.kinesis.shard_reader import ReaderLimits, ShardReader, StartPosition
from mcp_platform.protocol.clock import ManualClock

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += max(seconds, 0.05)


class TimedShard:
    """One open shard whose records carry arrival times; iterators are 'pos:<index>', and an
    iterator listed in ``expired`` fails once (the next one for that position is fresh)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.iterator_requests: list[dict[str, Any]] = []
        self.expired: set[str] = set()
        self.throttle_next = 0
        self.on_get: Any = None

    def add(self, data: str, arrival: datetime) -> None:
        seq = str(len(self.records) + 1)
        self.records.append(
            {"SequenceNumber": seq, "Data": data.encode(), "PartitionKey": "k", "ApproximateArrivalTimestamp": arrival}
        )

    def get_shard_iterator(self, **kw: Any) -> dict[str, Any]:
        self.iterator_requests.append(kw)
        kind = kw["ShardIteratorType"]
        if kind == "LATEST":
            pos = len(self.records)
        elif kind == "AT_TIMESTAMP":
            pos = next(
                (i for i, r in enumerate(self.records) if r["ApproximateArrivalTimestamp"] >= kw["Timestamp"]),
                len(self.records),
            )
        elif kind == "AFTER_SEQUENCE_NUMBER":
            pos = int(kw["StartingSequenceNumber"])
        else:
            pos = 0
        return {"ShardIterator": f"pos:{pos}"}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:
        if self.on_get:
            self.on_get()
        if self.throttle_next:
            self.throttle_next -= 1
            error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}
            raise ClientError(error, "GetRecords")  # type: ignore[arg-type]
        if ShardIterator in self.expired:
            self.expired.discard(ShardIterator)  # a re-acquired iterator is a new one
            raise ClientError({"Error": {"Code": "ExpiredIteratorException", "Message": "expired"}}, "GetRecords")  # type: ignore[arg-type]
        pos = int(ShardIterator.split(":")[1])
        page = self.records[pos : pos + Limit]
        return {"Records": page, "NextShardIterator": f"pos:{pos + len(page)}", "MillisBehindLatest": 0}


def reader(shard: TimedShard, clock: Clock, wall: datetime = T0, **limits: Any) -> ShardReader:
    return ShardReader(
        shard,
        "events",
        limits=ReaderLimits(stop_at_tip=False, empty_backoff_s=0.0, **limits),
        monotonic=clock,
        sleep=clock.sleep,
        clock=ManualClock(wall.timestamp()),
    )


def test_k4_latest_iterator_expiring_before_any_record_loses_nothing() -> None:
    # Given a shard with an old record, read from LATEST (first iterator fetched at T0)
    shard = TimedShard()
    shard.add("old", T0 - timedelta(minutes=1))
    polls = [0]

    def first_poll_idles_then_a_record_arrives_and_the_iterator_expires() -> None:
        polls[0] += 1
        if polls[0] == 2:
            shard.add("arrived-while-idle", T0 + timedelta(minutes=6))
            shard.expired.add("pos:1")

    shard.on_get = first_poll_idles_then_a_record_arrives_and_the_iterator_expires
    clock = Clock()
    # When the reader re-acquires after the ExpiredIteratorException
    got = [
        r["Data"].decode() for r in reader(shard, clock).read_shard("shardId-0", StartPosition.latest(), deadline=1.0)
    ]
    # Then it resumes at the time of its first fetch, not at the new tip: the record is read once
    assert got == ["arrived-while-idle"]
    assert [r["ShardIteratorType"] for r in shard.iterator_requests] == ["LATEST", "AT_TIMESTAMP"]
    assert shard.iterator_requests[1]["Timestamp"] == T0


def test_k4_throttled_get_records_backs_off_and_retries() -> None:
    # Given a shard whose next three GetRecords calls are throttled
    shard = TimedShard()
    shard.add("r1", T0)
    shard.throttle_next = 3
    clock = Clock()
    # When read with a deadline
    got = [r["Data"].decode() for r in reader(shard, clock).read_shard("s", StartPosition.trim_horizon(), deadline=5.0)]
    # Then the record is read after growing pauses, and the read does not fail
    assert got == ["r1"]
    throttle_pauses = [s for s in clock.sleeps if s >= 0.2]
    assert throttle_pauses[:3] == pytest.approx([0.2, 0.4, 0.8])


def test_k4_persistent_throttling_ends_the_read_at_its_deadline() -> None:
    # Given a shard throttled for longer than the read may take
    shard = TimedShard()
    shard.add("r1", T0)
    shard.throttle_next = 1_000
    clock = Clock()
    # When read with a 3 s deadline / Then it returns (nothing read) by the deadline, pauses capped
    got = list(reader(shard, clock).read_shard("s", StartPosition.trim_horizon(), deadline=3.0))
    assert got == [] and clock.now <= 3.0 + 0.25
    assert max(clock.sleeps) <= 2.0


def test_k4_throttling_without_a_deadline_gives_up_after_bounded_retries() -> None:
    # Given a read without a deadline on a shard that stays throttled
    shard = TimedShard()
    shard.throttle_next = 1_000
    clock = Clock()
    # When read / Then after the bounded retries the throttling error propagates
    with pytest.raises(ClientError, match="ProvisionedThroughputExceeded"):
        list(reader(shard, clock, max_throttle_retries=4).read_shard("s", StartPosition.trim_horizon()))
    assert len([s for s in clock.sleeps if s >= 0.2]) == 4
