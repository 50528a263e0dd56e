"""Polling shard reader (K4) for on-demand reads such as the ``recent_tool_events`` tool.

Rules it enforces:
- the shard iterator is fetched right before the first GetRecords and lives only inside one
  ``read_*`` call: nothing is cached on the instance across invocations (iterators expire
  after 5 minutes);
- every next call uses the returned NextShardIterator;
- ExpiredIteratorException → a new AFTER_SEQUENCE_NUMBER iterator on the last record handed
  out, or the original position if none yet, where LATEST becomes AT_TIMESTAMP of the moment
  the first iterator was fetched (a new LATEST would skip what arrived meanwhile): nothing
  lost, nothing repeated;
- ProvisionedThroughputExceededException on GetRecords → exponential back-off (bounded) and
  retry within the read's deadline, the shard's read quota being shared with other consumers;
- a closed shard (no NextShardIterator) → its child shards (ListShards ParentShardId /
  AdjacentParentShardId), each read once all of its parents are done;
- ≤ 5 GetRecords per second per shard, and a growing pause on empty polls.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from mcp_platform.adapters.kinesis.rate_limit import ShardRateLimiter
from mcp_platform.protocol.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient
    from mypy_boto3_kinesis.type_defs import RecordTypeDef, ShardTypeDef


@dataclass(frozen=True)
class StartPosition:
    iterator_type: str
    sequence_number: str | None = None
    timestamp: datetime | None = None

    @classmethod
    def trim_horizon(cls) -> StartPosition:
        return cls("TRIM_HORIZON")

    @classmethod
    def latest(cls) -> StartPosition:
        return cls("LATEST")

    @classmethod
    def at_timestamp(cls, when: datetime) -> StartPosition:
        return cls("AT_TIMESTAMP", timestamp=when)

    @classmethod
    def after_sequence(cls, sequence_number: str) -> StartPosition:
        return cls("AFTER_SEQUENCE_NUMBER", sequence_number=sequence_number)


@dataclass(frozen=True)
class ReaderLimits:
    max_records_per_call: int = 1000
    empty_backoff_s: float = 0.2
    max_empty_backoff_s: float = 2.0
    # Stop when a poll is empty and the shard reports no lag: "read up to now".
    stop_at_tip: bool = True
    throttle_backoff_s: float = 0.2
    max_throttle_backoff_s: float = 2.0
    # Only for reads without a deadline: consecutive throttled polls before giving up.
    max_throttle_retries: int = 10


class ShardReader:
    def __init__(
        self,
        kinesis_client: KinesisClient,
        stream_name: str,
        *,
        limits: ReaderLimits | None = None,
        rate_limiter: ShardRateLimiter | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._kinesis = kinesis_client
        self._stream = stream_name
        self._limits = limits or ReaderLimits()
        self._monotonic = monotonic
        self._clock = clock
        self._sleep = sleep
        self._limiter = rate_limiter or ShardRateLimiter(monotonic=monotonic, sleep=sleep)
        self.get_records_calls = 0
        self.iterator_requests = 0

    def list_shards(self) -> list[ShardTypeDef]:
        shards: list[ShardTypeDef] = []
        kwargs: dict[str, Any] = {"StreamName": self._stream}
        while True:
            page = self._kinesis.list_shards(**kwargs)
            shards.extend(page.get("Shards", []))
            token = page.get("NextToken")
            if not token:
                return shards
            kwargs = {"NextToken": token}  # the API refuses StreamName together with NextToken

    def _iterator(self, shard_id: str, position: StartPosition) -> str:
        kwargs: dict[str, Any] = {
            "StreamName": self._stream,
            "ShardId": shard_id,
            "ShardIteratorType": position.iterator_type,
        }
        if position.sequence_number is not None:
            kwargs["StartingSequenceNumber"] = position.sequence_number
        if position.timestamp is not None:
            kwargs["Timestamp"] = position.timestamp
        self.iterator_requests += 1
        return str(self._kinesis.get_shard_iterator(**kwargs)["ShardIterator"])

    def read_shard(
        self, shard_id: str, position: StartPosition, *, deadline: float | None = None
    ) -> Generator[RecordTypeDef, None, bool]:
        """Yields raw Kinesis records of one shard; returns when at the tip, closed, or past
        ``deadline`` (a ``monotonic()`` value). The generator's return value is True if closed."""
        # Where to re-acquire while nothing has been read yet. LATEST has moved on by then, so
        # it becomes the moment of the first fetch (taken before it: nothing can fall between).
        origin = position
        if position.iterator_type == "LATEST":
            origin = StartPosition.at_timestamp(datetime.fromtimestamp(self._clock.now(), UTC))
        iterator = self._iterator(shard_id, position)  # fetched right before reading
        last_sequence: str | None = None
        empty_pause = self._limits.empty_backoff_s
        throttle_pause = self._limits.throttle_backoff_s
        throttled = 0
        while deadline is None or self._monotonic() < deadline:
            self._limiter.acquire(shard_id)
            self.get_records_calls += 1
            try:
                page = self._kinesis.get_records(ShardIterator=iterator, Limit=self._limits.max_records_per_call)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code")
                if code == "ExpiredIteratorException":
                    resume = StartPosition.after_sequence(last_sequence) if last_sequence else origin
                    iterator = self._iterator(shard_id, resume)
                    continue
                if code != "ProvisionedThroughputExceededException":
                    raise
                throttled += 1
                if deadline is None and throttled > self._limits.max_throttle_retries:
                    raise
                self._sleep(self._bounded(throttle_pause, deadline))
                throttle_pause = min(throttle_pause * 2, self._limits.max_throttle_backoff_s)
                continue
            throttled, throttle_pause = 0, self._limits.throttle_backoff_s
            records = page.get("Records", [])
            for record in records:
                last_sequence = record["SequenceNumber"]
                yield record
            next_iterator = page.get("NextShardIterator")
            if not next_iterator:
                return True  # closed shard: the caller moves on to its children
            iterator = next_iterator
            if records:
                empty_pause = self._limits.empty_backoff_s
                continue
            if self._limits.stop_at_tip and page.get("MillisBehindLatest", 0) == 0:
                return False
            self._sleep(empty_pause)
            empty_pause = min(empty_pause * 2, self._limits.max_empty_backoff_s)
        return False

    def _bounded(self, pause: float, deadline: float | None) -> float:
        """``pause``, cut short so the reader wakes up by its deadline."""
        return pause if deadline is None else max(0.0, min(pause, deadline - self._monotonic()))

    def read_stream(
        self,
        position: StartPosition,
        *,
        shard_filter: Callable[[ShardTypeDef], bool] | None = None,
        deadline: float | None = None,
    ) -> Iterator[RecordTypeDef]:
        """Reads every shard (optionally filtered, e.g. by hash range) parents before children.

        Children of a closed shard start at TRIM_HORIZON (all their data is newer than the
        parent's), or at the same timestamp for AT_TIMESTAMP reads.
        """
        shards = [s for s in self.list_shards() if shard_filter is None or shard_filter(s)]
        by_id = {s["ShardId"]: s for s in shards}
        done: set[str] = set()
        at_timestamp = position.iterator_type == "AT_TIMESTAMP"
        child_position = position if at_timestamp else StartPosition.trim_horizon()

        def parents(shard: ShardTypeDef) -> list[str]:
            ids = (shard.get("ParentShardId"), shard.get("AdjacentParentShardId"))
            return [p for p in ids if p and p in by_id]

        # Roots: shards whose parents are outside the listing (expired or filtered out).
        queue = [s["ShardId"] for s in shards if not parents(s)]
        while queue and (deadline is None or self._monotonic() < deadline):
            shard_id = queue.pop(0)
            start = position if not parents(by_id[shard_id]) else child_position
            closed = yield from self.read_shard(shard_id, start, deadline=deadline)
            done.add(shard_id)
            if not closed:
                continue  # open shard (or out of time): its children hold nothing yet
            for child in shards:
                if shard_id in parents(child) and all(p in done for p in parents(child)):
                    queue.append(child["ShardId"])
