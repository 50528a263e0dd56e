"""Local Kinesis poller on moto after a SplitShard (K4): the children are not starved.

moto's GetRecords always returns a NextShardIterator, even on a closed shard, and SplitShard
moves the parent's records into the children. The poller must still see the emptied, closed
parent as finished and go on with the children (moto re-puts the parent's records there, so
they arrive again: delivery is at-least-once and ingest dedupes by event id).
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local.mapping import EventSourceMapping, MappingConfig
from local.pollers import KinesisShards, StreamPoller
from mcp_platform.ops.lambda_records import SourceKind
from tests.support.aws import REGION, fake_credentials

STREAM = "events"


@pytest.fixture
def kinesis() -> Iterator[Any]:
    with fake_credentials(), mock_aws():
        client = boto3.client("kinesis", region_name=REGION)
        client.create_stream(StreamName=STREAM, ShardCount=1)
        yield client


def test_k4_children_of_a_split_shard_are_read_on_the_emulator(kinesis: Any) -> None:
    # Given a poller that has read the only shard
    delivered: list[str] = []

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        delivered.extend(base64.b64decode(r["kinesis"]["data"]).decode() for r in event["Records"])
        return {"batchItemFailures": []}

    config = MappingConfig(
        SourceKind.KINESIS,
        "ingest",
        "arn",
        batch_size=10,
        max_retries=3,
        bisect_on_error=True,
        report_batch_item_failures=True,
        max_record_age_s=-1,
    )
    source = KinesisShards(kinesis, STREAM, "arn:consumer", REGION)
    poller = StreamPoller("ingest", source, EventSourceMapping(config, invoke, lambda m: None), threading.Event())
    kinesis.put_record(StreamName=STREAM, Data=b"before", PartitionKey="a")
    while poller.poll_once():
        pass
    # When the shard is split and records arrive on the children
    (shard,) = kinesis.list_shards(StreamName=STREAM)["Shards"]
    kinesis.split_shard(StreamName=STREAM, ShardToSplit=shard["ShardId"], NewStartingHashKey=str(2**127))
    for key in ("a", "b", "c", "d"):
        kinesis.put_record(StreamName=STREAM, Data=f"after-{key}".encode(), PartitionKey=key)
    while poller.poll_once():
        pass
    # Then every record written after the split is delivered
    assert {"after-a", "after-b", "after-c", "after-d"} <= set(delivered)
