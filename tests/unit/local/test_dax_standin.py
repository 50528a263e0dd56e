"""The DAX stand-in's item cache: what it serves, what passes through, when a write is seen."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local.dax_standin import ItemCacheStandIn
from tests.support.tables import create_session_table

KEY = {"pk": {"S": "session#s"}, "sk": {"S": "metadata"}}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def table(aws_env: None) -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_session_table(client, "t")
        yield client


def item(value: str) -> dict[str, Any]:
    return {**KEY, "v": {"S": value}}


def test_eventual_reads_are_cached_misses_included_consistent_reads_pass_through(table: Any) -> None:
    clock = Clock()
    cache = ItemCacheStandIn(table, item_ttl_s=300, clock=clock)
    # Given a missing item read once (a negative entry), then written around the cache
    assert "Item" not in cache.get_item(TableName="t", Key=KEY)
    table.put_item(TableName="t", Item=item("a"))
    # Then an eventual read still answers "missing" from the cache; a consistent one sees the item
    assert "Item" not in cache.get_item(TableName="t", Key=KEY)
    assert cache.get_item(TableName="t", Key=KEY, ConsistentRead=True)["Item"]["v"] == {"S": "a"}
    assert (cache.stats.hits, cache.stats.misses) == (1, 1)
    # And once the entry is older than the item TTL the table is read again
    clock.now = 300
    assert cache.get_item(TableName="t", Key=KEY)["Item"]["v"] == {"S": "a"}


def test_a_write_through_the_cache_is_seen_by_the_next_read(table: Any) -> None:
    cache = ItemCacheStandIn(table, clock=Clock())
    cache.put_item(TableName="t", Item=item("a"))
    assert cache.get_item(TableName="t", Key=KEY)["Item"]["v"] == {"S": "a"}
    # When it is updated, then deleted, through the cache / Then each read sees the write
    cache.update_item(
        TableName="t", Key=KEY, UpdateExpression="SET v = :b", ExpressionAttributeValues={":b": {"S": "b"}}
    )
    assert cache.get_item(TableName="t", Key=KEY)["Item"]["v"] == {"S": "b"}
    cache.transact_write_items(TransactItems=[{"Delete": {"TableName": "t", "Key": KEY}}])
    assert "Item" not in cache.get_item(TableName="t", Key=KEY)


def test_batch_get_serves_cached_keys_and_reads_the_rest(table: Any) -> None:
    cache = ItemCacheStandIn(table, clock=Clock())
    other = {"pk": {"S": "session#s"}, "sk": {"S": "toolcall#1"}}
    table.put_item(TableName="t", Item=item("a"))
    cache.get_item(TableName="t", Key=KEY)  # cached
    answer = cache.batch_get_item(RequestItems={"t": {"Keys": [KEY, other]}})
    # Then the cached key came from the cache, the other from the table (missing: cached as such)
    assert [found["v"] for found in answer["Responses"]["t"]] == [{"S": "a"}]
    assert cache.stats.by_operation == {"BatchGetItem": 1}
    cache.batch_get_item(RequestItems={"t": {"Keys": [KEY, other]}})
    assert cache.stats.by_operation == {"BatchGetItem": 3}
