"""moto (in-process) fixtures for the event pipeline: fake credentials only here."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

REGION = "us-east-1"


@pytest.fixture
def aws(monkeypatch):
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield


@pytest.fixture
def kinesis(aws):
    return boto3.client("kinesis", region_name=REGION)


@pytest.fixture
def sqs(aws):
    return boto3.client("sqs", region_name=REGION)


@pytest.fixture
def dynamodb(aws):
    return boto3.client("dynamodb", region_name=REGION)


def make_stream(kinesis, name: str, shards: int) -> str:
    kinesis.create_stream(StreamName=name, ShardCount=shards)
    return name


def read_whole_stream(kinesis, name: str) -> list[dict]:
    """Every record of every shard, from TRIM_HORIZON (test read-back, not the K4 reader)."""
    records = []
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


def drain_queue(sqs, url: str) -> list[dict]:
    messages = []
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
