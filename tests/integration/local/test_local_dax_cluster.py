"""X6 on the local topology: every local instance reads and writes through the emulator's one DAX
item cache (local/dax_cluster.py), as every function does through one DAX cluster.

Each instance is a client of its own, as another process would hold. The control is the topology
it replaced, an item cache per process (two stand-ins on one table), which the same assertions
catch: the second instance keeps serving what it cached for the whole item TTL.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from local.dax_cluster import endpoint_url
from local.dax_standin import ItemCacheStandIn
from local.emulator import Emulator
from tests.support.aws import REGION, client, free_port
from tests.support.tables import create_session_table

pytestmark = pytest.mark.integration
TABLE = "sessions"
KEY = {"pk": {"S": "session#s1"}, "sk": {"S": "metadata"}}


@pytest.fixture(scope="module")
def emulator() -> Iterator[str]:
    served = Emulator(free_port(), REGION)
    served.start()
    try:
        create_session_table(client("dynamodb", served.endpoint_url), TABLE)
        yield served.endpoint_url
    finally:
        served.stop()


def instances(aws_url: str, topology: str) -> tuple[Any, Any]:
    if topology == "one cluster":
        return client("dynamodb", endpoint_url(aws_url)), client("dynamodb", endpoint_url(aws_url))
    table = client("dynamodb", aws_url)  # the control: a stand-in per process
    return ItemCacheStandIn(table), ItemCacheStandIn(table)


def note(value: str) -> dict[str, Any]:
    return {**KEY, "notes": {"L": [{"S": value}]}}


@pytest.mark.parametrize("topology", ["one cluster", "a cache per process (control)"])
def test_x6_a_write_through_one_instance_is_read_eventually_consistently_through_another(
    emulator: str, topology: str
) -> None:
    first, second = instances(emulator, topology)
    # Given an item the second instance has read (and so cached) eventually consistently
    first.put_item(TableName=TABLE, Item=note("one"))
    assert second.get_item(TableName=TABLE, Key=KEY)["Item"] == note("one")
    # When the first instance writes it again
    first.put_item(TableName=TABLE, Item=note("two"))
    # Then an eventually consistent read through the second returns the new item, at once
    read = second.get_item(TableName=TABLE, Key=KEY).get("Item")
    batch = second.batch_get_item(RequestItems={TABLE: {"Keys": [KEY]}})["Responses"][TABLE]
    if topology == "one cluster":
        assert (read, batch) == (note("two"), [note("two")])
    else:  # the per-process caches: the second still serves its own copy
        assert (read, batch) == (note("one"), [note("one")])


def test_x6_the_cluster_caches_what_it_read_and_answers_refusals_as_the_table_does(emulator: str) -> None:
    cluster, table = client("dynamodb", endpoint_url(emulator)), client("dynamodb", emulator)
    key = {"pk": {"S": "session#s2"}, "sk": {"S": "metadata"}}
    # Given an item read once through the cluster
    table.put_item(TableName=TABLE, Item={**key, "v": {"S": "cached"}})
    assert cluster.get_item(TableName=TABLE, Key=key)["Item"]["v"] == {"S": "cached"}
    # When a writer that goes around the cluster changes it (ingest, audit, the console)
    table.put_item(TableName=TABLE, Item={**key, "v": {"S": "around"}})
    # Then the cluster serves its cached copy (the X6 bound), a consistent read the table's
    assert cluster.get_item(TableName=TABLE, Key=key)["Item"]["v"] == {"S": "cached"}
    assert cluster.get_item(TableName=TABLE, Key=key, ConsistentRead=True)["Item"]["v"] == {"S": "around"}
    # And a refused conditional write reaches the caller as DynamoDB's own error
    with pytest.raises(cluster.exceptions.ConditionalCheckFailedException):
        cluster.put_item(TableName=TABLE, Item=key, ConditionExpression="attribute_not_exists(pk)")
    # And queries pass through to the table
    found = cluster.query(
        TableName=TABLE, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": key["pk"]}
    )
    assert found["Items"][0]["v"] == {"S": "around"}
