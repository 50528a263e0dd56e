"""K4 shard reader against a fake Kinesis read API (moto cannot expire iterators or reshard)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from mcp_platform.adapters.kinesis.rate_limit import ShardRateLimiter
from mcp_platform.adapters.kinesis.shard_reader import ReaderLimits, ShardReader, StartPosition


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class FakeShards:
    """Shards hold sequence-numbered records; iterators encode (shard, next index)."""

    def __init__(self, shards: dict[str, list[str]], *, closed=(), parents=None, expire_on_calls=()):
        self.data = shards
        self.closed = set(closed)
        self.parents = parents or {}
        self.expire_on_calls = set(expire_on_calls)
        self.iterator_calls: list[dict[str, Any]] = []
        self.get_calls = 0

    def list_shards(self, **kwargs):
        shards = []
        for shard_id in self.data:
            shard = {"ShardId": shard_id, "HashKeyRange": {"StartingHashKey": "0", "EndingHashKey": "9"}}
            parents = self.parents.get(shard_id, ())
            for field, parent in zip(("ParentShardId", "AdjacentParentShardId"), parents, strict=False):
                shard[field] = parent
            shards.append(shard)
        return {"Shards": shards}

    def get_shard_iterator(self, StreamName, ShardId, ShardIteratorType, StartingSequenceNumber=None, **kw):
        self.iterator_calls.append({"ShardId": ShardId, "Type": ShardIteratorType, "Seq": StartingSequenceNumber})
        seqs = self.data[ShardId]
        start = {"TRIM_HORIZON": 0, "AT_TIMESTAMP": 0, "LATEST": len(seqs)}.get(ShardIteratorType)
        if ShardIteratorType == "AFTER_SEQUENCE_NUMBER":
            start = seqs.index(StartingSequenceNumber) + 1
        return {"ShardIterator": f"{ShardId}|{start}"}

    def get_records(self, ShardIterator, Limit):
        self.get_calls += 1
        if self.get_calls in self.expire_on_calls:
            raise ClientError({"Error": {"Code": "ExpiredIteratorException", "Message": "expired"}}, "GetRecords")
        shard_id, start = ShardIterator.split("|")
        seqs = self.data[shard_id][int(start) : int(start) + Limit]
        end = int(start) + len(seqs)
        at_end = end >= len(self.data[shard_id])
        page = {
            "Records": [{"SequenceNumber": s, "Data": b"{}", "PartitionKey": "k"} for s in seqs],
            "MillisBehindLatest": 0,
        }
        if not (at_end and shard_id in self.closed):
            page["NextShardIterator"] = f"{shard_id}|{end}"
        return page


def reader(fake, clock=None, **limits):
    clock = clock or FakeClock()
    return ShardReader(
        fake, "events", limits=ReaderLimits(max_records_per_call=3, **limits), monotonic=clock, sleep=clock.sleep
    )


def test_k4_expired_iterator_mid_read_resumes_after_the_last_record_without_loss_or_duplicate():
    # Given 10 records read 3 at a time, and the 3rd GetRecords fails with ExpiredIteratorException
    seqs = [f"{i:03d}" for i in range(10)]
    fake = FakeShards({"shard-0": seqs}, expire_on_calls={3})
    r = reader(fake)
    # When the shard is read
    got = [rec["SequenceNumber"] for rec in r.read_shard("shard-0", StartPosition.trim_horizon())]
    # Then every record came exactly once, in order
    assert got == seqs
    # And the new iterator was AFTER_SEQUENCE_NUMBER of the last record handed out
    assert fake.iterator_calls[1] == {"ShardId": "shard-0", "Type": "AFTER_SEQUENCE_NUMBER", "Seq": "005"}


def test_k4_expired_before_any_record_reacquires_the_original_position():
    fake = FakeShards({"shard-0": ["1", "2"]}, expire_on_calls={1})
    got = [rec["SequenceNumber"] for rec in reader(fake).read_shard("shard-0", StartPosition.trim_horizon())]
    assert got == ["1", "2"]
    assert [c["Type"] for c in fake.iterator_calls] == ["TRIM_HORIZON", "TRIM_HORIZON"]


def test_k4_iterator_is_fetched_per_read_never_cached_across_invocations():
    # Given one reader used for two separate reads (two tool invocations)
    fake = FakeShards({"shard-0": ["1"]})
    r = reader(fake)
    list(r.read_shard("shard-0", StartPosition.trim_horizon()))
    list(r.read_shard("shard-0", StartPosition.trim_horizon()))
    # Then each read asked for a fresh iterator; between polls NextShardIterator was followed
    assert len(fake.iterator_calls) == 2


def test_k4_closed_shards_continue_on_children_after_all_parents():
    # Given a split (p0 -> c1) and a merge (c1 + p2 -> m3)
    fake = FakeShards(
        {"p0": ["a1", "a2"], "p2": ["b1"], "c1": ["c1"], "m3": ["m1"]},
        closed={"p0", "p2", "c1"},
        parents={"c1": ("p0",), "m3": ("c1", "p2")},
    )
    # When the whole stream is read
    got = [rec["SequenceNumber"] for rec in reader(fake).read_stream(StartPosition.trim_horizon())]
    # Then children come after their parents, the merge child after both parents, each once
    assert sorted(got) == sorted(["a1", "a2", "b1", "c1", "m1"])
    assert got.index("c1") > got.index("a2")
    assert got.index("m1") > max(got.index("c1"), got.index("b1"))
    child_iterators = [c for c in fake.iterator_calls if c["ShardId"] in ("c1", "m3")]
    assert all(c["Type"] == "TRIM_HORIZON" for c in child_iterators)


def test_k4_at_most_five_get_records_per_second_per_shard():
    # Given 30 records read 3 per call (10 calls) on a fake clock
    clock = FakeClock()
    fake = FakeShards({"shard-0": [f"{i:03d}" for i in range(30)]})
    list(reader(fake, clock).read_shard("shard-0", StartPosition.trim_horizon()))
    # Then 11 calls (10 full + 1 empty at the tip) took at least 10 x 200 ms of clock time
    assert fake.get_calls == 11
    assert clock.now >= 2.0 - 1e-9


def test_k4_rate_limiter_is_per_shard():
    clock = FakeClock()
    limiter = ShardRateLimiter(monotonic=clock, sleep=clock.sleep)
    limiter.acquire("a")
    limiter.acquire("b")  # another shard: no wait
    assert clock.sleeps == []
    limiter.acquire("a")
    assert clock.sleeps == [0.2]


def test_k4_empty_polls_back_off_exponentially_until_the_deadline():
    # Given an open, empty shard polled continuously (not stopping at the tip)
    clock = FakeClock()
    fake = FakeShards({"shard-0": []})
    r = reader(fake, clock, stop_at_tip=False, empty_backoff_s=0.25, max_empty_backoff_s=1.0)
    # When read for 5 s of clock time
    assert list(r.read_shard("shard-0", StartPosition.latest(), deadline=5.0)) == []
    # Then the empty-poll pauses grow 0.25, 0.5, 1.0 and are capped at 1.0
    backoffs = [s for s in clock.sleeps if s >= 0.25]
    assert backoffs[:4] == [0.25, 0.5, 1.0, 1.0]
