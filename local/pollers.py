"""Local event source mappings: a thread per mapping that reads shards and feeds the mapping.

Reading follows K4: each read continues with the NextShardIterator of the shard's previous read
when it starts where that read ended; otherwise (the first read, a batch re-read after a
failure, an iterator that expired) it takes a fresh one: TRIM_HORIZON first, then
AFTER_SEQUENCE_NUMBER of the last record handled. (The emulator keeps tables in place across a
failed transaction, see local/moto_patches.py, so its iterators stay valid.) At most one
GetRecords per shard per 0.2 s (5/s/shard) and a longer back-off when the stream is idle.
The Kinesis mapping reads with GetRecords: moto has no SubscribeToShard, so the enhanced
fan-out push is emulated by polling, and records carry the consumer ARN as EFO delivers them.

After a reshard, as Lambda does, a child shard is read only once each of its parents
(ParentShardId / AdjacentParentShardId) is closed and read to its end, so records of one
partition key reach the handler in order across the reshard.

The table-stream source puts the TTL service identity on the REMOVE records of the emulated TTL
sweeper's deletes (:mod:`local.ttl`), as AWS does on a TTL deletion; moto puts none anywhere.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from local.mapping import EventSourceMapping
from local.ttl import TtlDeletions
from local.worker import BackgroundWorker
from mcp_platform.ops.lambda_records import (
    SourceKind,
    dynamodb_event_record,
    kinesis_event_record,
    sequence_of,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodbstreams import DynamoDBStreamsClient
    from mypy_boto3_kinesis import KinesisClient

logger = logging.getLogger(__name__)
BUSY_INTERVAL_S = 0.2  # 5 GetRecords/s per shard
IDLE_INTERVAL_S = 0.5
ERROR_BACKOFF_S = 2.0
STALE_ITERATOR_CODES = ("ExpiredIteratorException", "TrimmedDataAccessException")


@dataclass(frozen=True)
class ShardInfo:
    shard_id: str
    parents: tuple[str, ...] = ()  # ParentShardId, AdjacentParentShardId
    ending_sequence: str | None = None  # set once the shard is closed


@dataclass(frozen=True)
class ShardPage:
    records: list[dict[str, Any]]
    finished: bool  # closed and read to its end: its children may start


class ShardSource(Protocol):
    kind: SourceKind
    stream_name: str  # the Kinesis stream, or the table whose stream it is

    def shards(self) -> list[ShardInfo]: ...

    def read(self, shard: ShardInfo, after: str | None, limit: int) -> ShardPage: ...


def _position(after: str | None, key: str) -> dict[str, Any]:
    """GetShardIterator's position arguments: Kinesis names the sequence number's parameter
    StartingSequenceNumber, DynamoDB Streams SequenceNumber."""
    if after is None:
        return {"ShardIteratorType": "TRIM_HORIZON"}
    return {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", key: after}


def _shard_info(shard: Mapping[str, Any]) -> ShardInfo:
    parents = tuple(p for p in (shard.get("ParentShardId"), shard.get("AdjacentParentShardId")) if p)
    return ShardInfo(shard["ShardId"], parents, shard.get("SequenceNumberRange", {}).get("EndingSequenceNumber"))


def _finished(shard: ShardInfo, page: Mapping[str, Any]) -> bool:
    """No NextShardIterator is how the services say "closed, nothing left". moto always returns
    one (and moves a split shard's records into its children), so a closed shard whose read
    came back empty counts as finished too."""
    if not page.get("NextShardIterator"):
        return True
    return shard.ending_sequence is not None and not page["Records"]


class _Iterators:
    """Per shard: the NextShardIterator of the last read and the position it continues from."""

    def __init__(self, fresh: Callable[[str, str | None], str], sequence: Callable[[Mapping[str, Any]], str]) -> None:
        self._fresh, self._sequence = fresh, sequence
        self._next: dict[str, tuple[str | None, str]] = {}

    def get_records(
        self, shard_id: str, after: str | None, get: Callable[[str], Mapping[str, Any]]
    ) -> Mapping[str, Any]:
        stored = self._next.pop(shard_id, None)  # popped: a failed read leaves nothing to reuse
        if stored is not None and stored[0] == after:
            try:
                page = get(stored[1])
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") not in STALE_ITERATOR_CODES:
                    raise
                logger.info("%s: shard iterator expired; taking a fresh one", shard_id)
                page = get(self._fresh(shard_id, after))
        else:
            page = get(self._fresh(shard_id, after))
        if page.get("NextShardIterator"):
            ended = self._sequence(page["Records"][-1]) if page["Records"] else after
            self._next[shard_id] = (ended, page["NextShardIterator"])
        return page


class KinesisShards:
    kind = SourceKind.KINESIS

    def __init__(self, kinesis: KinesisClient, stream_name: str, consumer_arn: str, region: str) -> None:
        # consumer_arn: the source ARN records carry (the stream's own when the mapping reads it directly)
        self._kinesis, self.stream_name, self._consumer_arn, self._region = kinesis, stream_name, consumer_arn, region
        self._iterators = _Iterators(self._fresh, lambda record: str(record["SequenceNumber"]))

    def shards(self) -> list[ShardInfo]:
        # Listed every poll: a shard that appears later (resharding) is picked up.
        return [_shard_info(shard) for shard in self._kinesis.list_shards(StreamName=self.stream_name)["Shards"]]

    def _fresh(self, shard_id: str, after: str | None) -> str:
        position = _position(after, "StartingSequenceNumber")
        return str(
            self._kinesis.get_shard_iterator(StreamName=self.stream_name, ShardId=shard_id, **position)["ShardIterator"]
        )

    def read(self, shard: ShardInfo, after: str | None, limit: int) -> ShardPage:
        page = self._iterators.get_records(
            shard.shard_id, after, lambda iterator: self._kinesis.get_records(ShardIterator=iterator, Limit=limit)
        )
        records = [
            kinesis_event_record(r, shard_id=shard.shard_id, source_arn=self._consumer_arn, region=self._region)
            for r in page["Records"]
        ]
        return ShardPage(records, _finished(shard, page))


class TableStreamShards:
    kind = SourceKind.DYNAMODB

    def __init__(
        self, streams: DynamoDBStreamsClient, stream_arn: str, ttl_deletions: TtlDeletions | None = None
    ) -> None:
        self._streams, self._stream_arn = streams, stream_arn
        self.stream_name = stream_arn.split(":", 5)[5].split("/")[1]  # arn:...:table/<name>/stream/<label>
        self._ttl_deletions = ttl_deletions
        self._iterators = _Iterators(self._fresh, lambda record: str(record["dynamodb"]["SequenceNumber"]))

    def shards(self) -> list[ShardInfo]:
        description = self._streams.describe_stream(StreamArn=self._stream_arn)["StreamDescription"]
        return [_shard_info(shard) for shard in description["Shards"]]

    def _fresh(self, shard_id: str, after: str | None) -> str:
        position = _position(after, "SequenceNumber")
        return str(
            self._streams.get_shard_iterator(StreamArn=self._stream_arn, ShardId=shard_id, **position)["ShardIterator"]
        )

    def read(self, shard: ShardInfo, after: str | None, limit: int) -> ShardPage:
        page = self._iterators.get_records(
            shard.shard_id, after, lambda iterator: self._streams.get_records(ShardIterator=iterator, Limit=limit)
        )
        raw = page["Records"]
        if self._ttl_deletions is not None:
            raw = [self._ttl_deletions.mark(r) for r in raw]
        records = [dynamodb_event_record(r, stream_arn=self._stream_arn) for r in raw]
        return ShardPage(records, _finished(shard, page))


class StreamPoller(BackgroundWorker):
    """Polls every shard of one source and hands each batch to the mapping, in shard order."""

    def __init__(self, name: str, source: ShardSource, mapping: EventSourceMapping, stop: threading.Event) -> None:
        self.name = name
        self._source = source
        self._mapping = mapping
        self._stop = stop
        self._checkpoints: dict[str, str] = {}
        self._finished: set[str] = set()  # shards closed and read to their end
        super().__init__(f"poller-{name}")

    @property
    def source(self) -> ShardSource:
        return self._source

    def checkpoints(self) -> dict[str, str]:
        """Per shard, the sequence number of the last record handled (what the health line and
        the stream trimming read, from another thread: a copy)."""
        return self._checkpoints.copy()

    def poll_once(self) -> int:
        """One pass over every readable shard; returns how many records were handled."""
        handled = 0
        shards = self._source.shards()
        listed = {shard.shard_id for shard in shards}
        for shard in shards:
            if self._stop.is_set():
                break  # stopping: no new batch (what is not handled yet stays unhandled)
            if shard.shard_id in self._finished or not self._parents_done(shard, listed):
                continue
            page = self._source.read(shard, self._checkpoints.get(shard.shard_id), self._mapping.config.batch_size)
            if page.records:
                self._mapping.process(page.records, shard.shard_id)
                # Only now: if the DLQ refused a message, process() raised and the batch is re-read.
                self._checkpoints[shard.shard_id] = sequence_of(self._source.kind, page.records[-1])
                handled += len(page.records)
            if page.finished:
                self._finished.add(shard.shard_id)
        return handled

    def _parents_done(self, shard: ShardInfo, listed: set[str]) -> bool:
        """A parent no longer listed has aged out of the stream: nothing of it is left to read."""
        return all(parent in self._finished or parent not in listed for parent in shard.parents)

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                handled = self.poll_once()
                # Busy: the next GetRecords BUSY_INTERVAL_S after this one began, not after the
                # batch was handled (a slow batch must not halve the read rate).
                wait = max(0.0, BUSY_INTERVAL_S - (time.monotonic() - began)) if handled else IDLE_INTERVAL_S
            except Exception:
                if self._stop.is_set():
                    break  # the emulator is going down with us
                logger.exception("poller %s failed; retrying from its last checkpoint", self.name)
                wait = ERROR_BACKOFF_S
            self._stop.wait(wait)
