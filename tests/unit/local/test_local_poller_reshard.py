"""Local Kinesis poller across a reshard (K4: closed shard → its children, after it).

As Lambda's event source mapping does, a child shard is read only after each parent
(ParentShardId, AdjacentParentShardId) is closed and read to its end, so records of one
partition key reach the handler in order. moto's SplitShard moves the parent's records into
the children, so the shard source is faked with the lineage ListShards returns.
"""

from __future__ import annotations

import base64
import threading
from datetime import UTC, datetime
from typing import Any

from local.mapping import EventSourceMapping, MappingConfig
from local.pollers import ShardInfo, ShardPage, StreamPoller
from mcp_platform.ops.lambda_records import SourceKind, kinesis_event_record


class ReshardedSource:
    """Shards with records, lineage and a closed flag; a read reports ``finished`` when it
    reaches the end of a closed shard (GetRecords returns no NextShardIterator there)."""

    kind = SourceKind.KINESIS

    def __init__(self, lineage: dict[str, tuple[str, ...]], closed: set[str]) -> None:
        self.lineage = lineage
        self.closed = closed
        self.data: dict[str, list[str]] = {shard_id: [] for shard_id in lineage}
        self.reads: list[str] = []

    def put(self, shard_id: str, *values: str) -> None:
        self.data[shard_id].extend(values)

    def shards(self) -> list[ShardInfo]:
        return [ShardInfo(shard_id, parents) for shard_id, parents in self.lineage.items()]

    def read(self, shard: ShardInfo, after: str | None, limit: int) -> ShardPage:
        self.reads.append(shard.shard_id)
        values = self.data[shard.shard_id]
        start = 0 if after is None else int(after)
        page = values[start : start + limit]
        records = [
            kinesis_event_record(
                {
                    "SequenceNumber": str(start + i + 1),
                    "Data": value.encode(),
                    "PartitionKey": "k",
                    "ApproximateArrivalTimestamp": datetime.now(UTC),
                },
                shard_id=shard.shard_id,
                source_arn="arn:aws:kinesis:us-east-1:123456789012:stream/s/consumer/c:1",
                region="us-east-1",
            )
            for i, value in enumerate(page)
        ]
        finished = shard.shard_id in self.closed and start + len(page) >= len(values)
        return ShardPage(records, finished)


def poller(source: ReshardedSource, delivered: list[str]) -> StreamPoller:
    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        delivered.extend(base64.b64decode(r["kinesis"]["data"]).decode() for r in event["Records"])
        return {"batchItemFailures": []}

    config = MappingConfig(
        SourceKind.KINESIS,
        "ingest",
        "arn",
        batch_size=2,
        max_retries=3,
        bisect_on_error=True,
        report_batch_item_failures=True,
        max_record_age_s=-1,
    )
    return StreamPoller("ingest", source, EventSourceMapping(config, invoke, lambda m: None), threading.Event())


def drain(p: StreamPoller) -> None:
    while p.poll_once():
        pass


def test_k4_split_parent_is_read_to_its_end_before_its_children() -> None:
    # Given shard 0 split into 1 and 2, with records left in the closed parent
    source = ReshardedSource({"s0": (), "s1": ("s0",), "s2": ("s0",)}, closed={"s0"})
    source.put("s0", "p1", "p2", "p3", "p4", "p5")
    source.put("s1", "c1-a")
    source.put("s2", "c2-a")
    delivered: list[str] = []
    # When polled until idle
    drain(poller(source, delivered))
    # Then every parent record comes before any child record, and nothing is lost or repeated
    assert delivered[:5] == ["p1", "p2", "p3", "p4", "p5"]
    assert sorted(delivered[5:]) == ["c1-a", "c2-a"]


def test_k4_merged_child_waits_for_both_parents() -> None:
    # Given shards 0 and 1 merged into 2, shard 1 still open (the merge not finished)
    source = ReshardedSource({"s0": (), "s1": (), "s2": ("s0", "s1")}, closed={"s0"})
    source.put("s0", "a1")
    source.put("s1", "b1")
    source.put("s2", "m1")
    delivered: list[str] = []
    p = poller(source, delivered)
    # When polled while the adjacent parent is open / Then the child is not read
    drain(p)
    assert sorted(delivered) == ["a1", "b1"] and "s2" not in source.reads
    # When the adjacent parent closes / Then the child follows
    source.closed.add("s1")
    drain(p)
    assert delivered[-1] == "m1"


def test_k4_child_of_a_parent_aged_out_of_the_stream_is_read() -> None:
    # Given a child whose parent is no longer listed (past the retention)
    source = ReshardedSource({"s5": ("s0",)}, closed=set())
    source.put("s5", "x")
    delivered: list[str] = []
    # When polled / Then the child is read
    drain(poller(source, delivered))
    assert delivered == ["x"]
