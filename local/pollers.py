"""Local event source mappings: a thread per mapping that reads shards and feeds the mapping.

Reading follows K4: a fresh iterator right before each read (TRIM_HORIZON first, then
AFTER_SEQUENCE_NUMBER of the last record handled), never cached across polls; at most one
GetRecords per shard per 0.2 s (5/s/shard) and a longer back-off when the stream is idle.
The Kinesis mapping reads with GetRecords: moto has no SubscribeToShard, so the enhanced
fan-out push is emulated by polling, and records carry the consumer ARN as EFO delivers them.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from local.mapping import EventSourceMapping
from local.records import SourceKind, dynamodb_event_record, kinesis_event_record, sequence_of

logger = logging.getLogger(__name__)
BUSY_INTERVAL_S = 0.2  # 5 GetRecords/s per shard
IDLE_INTERVAL_S = 0.5
ERROR_BACKOFF_S = 2.0


class ShardSource(Protocol):
    kind: SourceKind

    def shard_ids(self) -> list[str]: ...

    def read(self, shard_id: str, after: str | None, limit: int) -> list[dict[str, Any]]: ...


def _position(after: str | None, key: str) -> dict[str, str]:
    """Kinesis names the parameter StartingSequenceNumber, DynamoDB Streams SequenceNumber."""
    if after is None:
        return {"ShardIteratorType": "TRIM_HORIZON"}
    return {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", key: after}


class KinesisShards:
    kind = SourceKind.KINESIS

    def __init__(self, kinesis: Any, stream_name: str, consumer_arn: str, region: str) -> None:
        self._kinesis, self._stream, self._consumer_arn, self._region = kinesis, stream_name, consumer_arn, region

    def shard_ids(self) -> list[str]:
        # Listed every poll: a shard that appears later (resharding) is picked up.
        return [shard["ShardId"] for shard in self._kinesis.list_shards(StreamName=self._stream)["Shards"]]

    def read(self, shard_id: str, after: str | None, limit: int) -> list[dict[str, Any]]:
        iterator = self._kinesis.get_shard_iterator(
            StreamName=self._stream, ShardId=shard_id, **_position(after, "StartingSequenceNumber")
        )
        page = self._kinesis.get_records(ShardIterator=iterator["ShardIterator"], Limit=limit)
        return [
            kinesis_event_record(r, shard_id=shard_id, source_arn=self._consumer_arn, region=self._region)
            for r in page["Records"]
        ]


class TableStreamShards:
    kind = SourceKind.DYNAMODB

    def __init__(self, streams: Any, stream_arn: str) -> None:
        self._streams, self._stream_arn = streams, stream_arn

    def shard_ids(self) -> list[str]:
        description = self._streams.describe_stream(StreamArn=self._stream_arn)["StreamDescription"]
        return [shard["ShardId"] for shard in description["Shards"]]

    def read(self, shard_id: str, after: str | None, limit: int) -> list[dict[str, Any]]:
        # Fresh iterator every poll: moto's iterators go wrong across failed transactions.
        iterator = self._streams.get_shard_iterator(
            StreamArn=self._stream_arn, ShardId=shard_id, **_position(after, "SequenceNumber")
        )
        page = self._streams.get_records(ShardIterator=iterator["ShardIterator"], Limit=limit)
        return [dynamodb_event_record(r, stream_arn=self._stream_arn) for r in page["Records"]]


class StreamPoller:
    """Polls every shard of one source and hands each batch to the mapping, in shard order."""

    def __init__(self, name: str, source: ShardSource, mapping: EventSourceMapping, stop: threading.Event) -> None:
        self.name = name
        self._source = source
        self._mapping = mapping
        self._stop = stop
        self._checkpoints: dict[str, str] = {}
        self._thread = threading.Thread(target=self._run, name=f"poller-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def poll_once(self) -> int:
        """One pass over every shard; returns how many records were handled."""
        handled = 0
        for shard_id in self._source.shard_ids():
            records = self._source.read(shard_id, self._checkpoints.get(shard_id), self._mapping.config.batch_size)
            if not records:
                continue
            self._mapping.process(records, shard_id)
            # Only now: if the DLQ refused a message, process() raised and the batch is re-read.
            self._checkpoints[shard_id] = sequence_of(self._source.kind, records[-1])
            handled += len(records)
        return handled

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                wait = BUSY_INTERVAL_S if self.poll_once() else IDLE_INTERVAL_S
            except Exception:
                if self._stop.is_set():
                    break  # the emulator is going down with us
                logger.exception("poller %s failed; retrying from its last checkpoint", self.name)
                wait = ERROR_BACKOFF_S
            self._stop.wait(wait)
