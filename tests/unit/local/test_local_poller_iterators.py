"""Local table-stream poller: NextShardIterator reused across polls, a fresh one whenever needed.

The DynamoDB Streams API is faked so that what the poller asks for is visible: how many
iterators it takes, and which records each read returns (an iterator is a position).
"""

from __future__ import annotations

import itertools
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from local.mapping import EventSourceMapping, MappingConfig
from local.pollers import StreamPoller, TableStreamShards
from mcp_platform.ops.lambda_records import SourceKind

STREAM_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/sessions/stream/2026-12-01T00:00:00.000"


class FakeStreams:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.fresh: list[str] = []  # the iterator types asked for
        self.expired: set[str] = set()
        self.last_next = ""  # the NextShardIterator of the last GetRecords
        self._ids = itertools.count()

    def put(self, count: int) -> None:
        for _ in range(count):
            sequence = str(100 + len(self.records))
            change = {"SequenceNumber": sequence, "ApproximateCreationDateTime": datetime.now(UTC), "Keys": {}}
            self.records.append(
                {"eventID": sequence, "eventName": "INSERT", "awsRegion": "us-east-1", "dynamodb": change}
            )

    def _iterator(self, index: int) -> str:
        return f"{index}:{next(self._ids)}"

    def describe_stream(self, StreamArn: str) -> dict[str, Any]:
        return {"StreamDescription": {"Shards": [{"ShardId": "shard-1", "SequenceNumberRange": {}}]}}

    def get_shard_iterator(self, StreamArn: str, ShardId: str, ShardIteratorType: str, **after: str) -> dict[str, Any]:
        self.fresh.append(ShardIteratorType)
        index = 0 if ShardIteratorType == "TRIM_HORIZON" else int(after["SequenceNumber"]) - 100 + 1
        return {"ShardIterator": self._iterator(index)}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:
        if ShardIterator in self.expired:
            error = {"Error": {"Code": "ExpiredIteratorException", "Message": "expired"}}
            raise ClientError(error, "GetRecords")  # type: ignore[arg-type]
        index = int(ShardIterator.split(":")[0])
        page = self.records[index : index + Limit]
        self.last_next = self._iterator(index + len(page))
        return {"Records": page, "NextShardIterator": self.last_next}


def poller(streams: FakeStreams, invoke: Any, dead_letter: Any = lambda m: None) -> StreamPoller:
    config = MappingConfig(
        SourceKind.DYNAMODB, "audit", STREAM_ARN, batch_size=10, max_retries=0, bisect_on_error=False,
        report_batch_item_failures=True, max_record_age_s=-1,
    )  # fmt: skip
    source = TableStreamShards(streams, STREAM_ARN)
    return StreamPoller("audit", source, EventSourceMapping(config, invoke, dead_letter), threading.Event())


def sequences(event: dict[str, Any]) -> list[str]:
    return [record["dynamodb"]["SequenceNumber"] for record in event["Records"]]


def test_each_poll_continues_with_the_previous_reads_next_iterator() -> None:
    streams, delivered = FakeStreams(), []
    p = poller(streams, lambda event: delivered.extend(sequences(event)))
    streams.put(3)
    assert p.poll_once() == 3
    assert p.poll_once() == 0  # an empty read also hands out the iterator to continue with
    streams.put(12)
    assert p.poll_once() == 10
    assert p.poll_once() == 2
    assert delivered == [str(100 + n) for n in range(15)]
    assert streams.fresh == ["TRIM_HORIZON"]
    assert p.source.stream_name == "sessions"
    assert p.checkpoints() == {"shard-1": "114"}


def test_a_batch_that_was_not_handled_is_read_again_from_a_fresh_iterator() -> None:
    """The handler fails and the on-failure destination refuses the batch once: the poller keeps
    its checkpoint, so the next poll starts where the stored iterator does not: a fresh one."""
    streams, delivered, refusals = FakeStreams(), [], [RuntimeError("the DLQ is down")]

    def invoke(event: dict[str, Any]) -> None:
        delivered.append(sequences(event))
        raise ValueError("handler failed")

    def dead_letter(message: dict[str, Any]) -> None:
        if refusals:
            raise refusals.pop()

    p = poller(streams, invoke, dead_letter)
    streams.put(2)
    with pytest.raises(RuntimeError, match="the DLQ is down"):
        p.poll_once()
    assert p.checkpoints() == {}
    assert p.poll_once() == 2
    assert delivered == [["100", "101"], ["100", "101"]]
    assert streams.fresh == ["TRIM_HORIZON", "TRIM_HORIZON"]


def test_an_expired_iterator_is_replaced_after_the_last_record_handled() -> None:
    streams, delivered = FakeStreams(), []
    p = poller(streams, lambda event: delivered.extend(sequences(event)))
    streams.put(2)
    p.poll_once()
    streams.expired = {streams.last_next}
    streams.put(2)
    assert p.poll_once() == 2
    assert delivered == ["100", "101", "102", "103"]
    assert streams.fresh == ["TRIM_HORIZON", "AFTER_SEQUENCE_NUMBER"]
