"""Kinesis and SQS read-back helpers for tests (not the K4 shard reader under test)."""

from __future__ import annotations

from typing import Any


def make_stream(kinesis: Any, name: str, shards: int) -> str:
    kinesis.create_stream(StreamName=name, ShardCount=shards)
    return name


def read_whole_stream(kinesis: Any, name: str) -> list[dict[str, Any]]:
    """Every record of every shard, from TRIM_HORIZON (test read-back, not the K4 reader)."""
    records: list[dict[str, Any]] = []
    for shard in kinesis.list_shards(StreamName=name)["Shards"]:
        iterator = kinesis.get_shard_iterator(
            StreamName=name, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while True:
            page = kinesis.get_records(ShardIterator=iterator, Limit=10_000)
            for record in page["Records"]:
                records.append(record | {"ShardId": shard["ShardId"]})
            if not page["Records"]:
                break
            iterator = page["NextShardIterator"]
    return records


def drain_queue(sqs: Any, url: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], VisibilityTimeout=600
        ).get("Messages", [])
        if not batch:
            return messages
        messages.extend(batch)
        # Deleting keeps moto's queue scan short (it rescans every in-flight message per call).
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)]
        )
