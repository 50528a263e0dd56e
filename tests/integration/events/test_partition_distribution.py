"""K3: session-id partition keys spread evenly over shards; a constant key does not."""

from __future__ import annotations

import random
import uuid
from collections import Counter

from mcp_platform.adapters.kinesis.producer import EventProducer
from mcp_platform.adapters.sqs.dead_letters import DeadLetterQueue
from tests.support.kinesis import make_stream, read_whole_stream

SHARDS = 4
EVENTS = 10_000


def shares_within(counts: Counter, shards: int, tolerance: float) -> bool:
    """True if every shard got its fair share ±tolerance (a missing shard counts as 0)."""
    fair = sum(counts.values()) / shards
    return len(counts) == shards and all(abs(c - fair) <= tolerance * fair for c in counts.values())


def publish(kinesis, sqs, keys: list[str]) -> Counter:
    stream = make_stream(kinesis, "tool-events", SHARDS)
    url = sqs.create_queue(QueueName="producer-dlq")["QueueUrl"]
    producer = EventProducer(kinesis, stream, DeadLetterQueue(sqs, url), sleep=lambda s: None)
    for i, key in enumerate(keys):
        producer.add_record(b'{"i":%d}' % i, key)
    assert producer.flush().sent == len(keys)
    return Counter(record["ShardId"] for record in read_whole_stream(kinesis, stream))


def test_k3_ten_thousand_session_ids_spread_within_15_percent(kinesis, sqs):
    # Given 10,000 session ids (server-minted UUIDs) as partition keys over 4 shards
    rng = random.Random(3)
    keys = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(EVENTS)]
    # When published (moto routes by the MD5 of the key, like Kinesis)
    counts = publish(kinesis, sqs, keys)
    # Then every shard holds 2,500 ± 15 %
    assert sum(counts.values()) == EVENTS
    assert shares_within(counts, SHARDS, 0.15), counts


def test_k3_control_constant_key_fails_the_same_check(kinesis, sqs):
    # Given the anti-pattern: one constant partition key
    counts = publish(kinesis, sqs, ["mcp-tool-events"] * EVENTS)
    # Then all records pile onto one shard and the same check fails
    assert len(counts) == 1
    assert not shares_within(counts, SHARDS, 0.15)
