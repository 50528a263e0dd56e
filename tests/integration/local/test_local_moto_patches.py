"""local/moto_patches.py against the emulator it patches: DynamoDB's transaction semantics kept.

Each test drives a real AtomicMotoServer (which applies the patches) over HTTP, with a fresh
table that has a NEW_AND_OLD_IMAGES stream; moto's in-process state is read only to show what
the patches promise about it (the same table object after a failed transaction, nothing
tracked, the stream's numbering after a trim).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodb.models.table import StreamRecord, Table

from local import moto_patches
from tests.support.aws import REGION, client, moto_server

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    with moto_server() as url:
        yield url


@pytest.fixture
def table(moto_url: str, aws_env: None) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    client("dynamodb", moto_url).create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    return name


def key(pk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": "s"}}


def put(table: str, pk: str, **extra: Any) -> dict[str, Any]:
    return {"Put": {"TableName": table, "Item": {**key(pk), "v": {"N": "1"}}, **extra}}


def update(table: str, pk: str, expression: str, number: str, **extra: Any) -> dict[str, Any]:
    values = {":n": {"N": number}}
    return {"Update": {"TableName": table, "Key": key(pk), "UpdateExpression": expression,
                       "ExpressionAttributeValues": values, **extra}}  # fmt: skip


def delete(table: str, pk: str) -> dict[str, Any]:
    return {"Delete": {"TableName": table, "Key": key(pk)}}


def check(table: str, pk: str, condition: str, **extra: Any) -> dict[str, Any]:
    return {"ConditionCheck": {"TableName": table, "Key": key(pk), "ConditionExpression": condition, **extra}}


def seed(url: str, table: str, *pks: str) -> None:
    for pk in pks:
        client("dynamodb", url).put_item(TableName=table, Item={**key(pk), "v": {"N": "1"}})


def items(url: str, table: str) -> list[dict[str, Any]]:
    return sorted(client("dynamodb", url).scan(TableName=table)["Items"], key=lambda i: i["pk"]["S"])


class Stream:
    def __init__(self, url: str, table: str) -> None:
        self.streams = client("dynamodbstreams", url)
        self.arn = client("dynamodb", url).describe_table(TableName=table)["Table"]["LatestStreamArn"]
        self.shard = self.streams.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"][0]["ShardId"]

    def iterator(self, **position: str) -> str:
        position = position or {"ShardIteratorType": "TRIM_HORIZON"}
        return str(self.streams.get_shard_iterator(StreamArn=self.arn, ShardId=self.shard, **position)["ShardIterator"])

    def read(self, iterator: str) -> tuple[list[dict[str, Any]], str]:
        page = self.streams.get_records(ShardIterator=iterator)
        return page["Records"], page["NextShardIterator"]

    def all(self) -> list[dict[str, Any]]:
        return self.read(self.iterator())[0]


def cancelled(url: str, actions: list[dict[str, Any]]) -> ClientError:
    with pytest.raises(ClientError) as raised:
        client("dynamodb", url).transact_write_items(TransactItems=actions)
    return raised.value


def moto_table(name: str) -> Table:
    table: Table = dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION].tables[name]
    return table


def test_a_failed_condition_cancels_everything_with_reasons_and_the_all_old_item(moto_url: str, table: str) -> None:
    """Given items a, b and d, when a transaction puts c, updates a, deletes d and checks b with
    a condition b fails, then it is cancelled with one reason per action (b's carrying b's
    item, ALL_OLD), and no item, stream record or table object has changed."""
    seed(moto_url, table, "a", "b", "d")
    stream = Stream(moto_url, table)
    before_items, before_records = items(moto_url, table), stream.all()
    table_object, shard_object = moto_table(table), moto_table(table).stream_shard
    error = cancelled(
        moto_url,
        [
            put(table, "c"),
            update(table, "a", "SET v = :n", "2"),
            delete(table, "d"),
            check(table, "b", "attribute_not_exists(pk)", ReturnValuesOnConditionCheckFailure="ALL_OLD"),
        ],
    )
    assert error.response["Error"]["Code"] == "TransactionCanceledException"
    reasons = error.response["CancellationReasons"]
    assert [r["Code"] for r in reasons] == ["None", "None", "None", "ConditionalCheckFailed"]
    assert reasons[3]["Item"] == {**key("b"), "v": {"N": "1"}}
    assert items(moto_url, table) == before_items
    assert stream.all() == before_records
    assert moto_table(table) is table_object
    assert moto_table(table).stream_shard is shard_object


def test_an_iterator_taken_before_a_failed_transaction_reads_only_what_came_after(moto_url: str, table: str) -> None:
    """Given an iterator after the last record, when a transaction fails (after moto applied some
    of it) and then one item is put, the old iterator reads exactly that one INSERT: none of the
    cancelled writes, and nothing lost."""
    seed(moto_url, table, "a")
    stream = Stream(moto_url, table)
    last = stream.all()[-1]["dynamodb"]["SequenceNumber"]
    iterator = stream.iterator(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=last)
    nine = {"ExpressionAttributeValues": {":n": {"N": "9"}}}
    cancelled(
        moto_url,
        [put(table, "ghost"), update(table, "new", "SET v = :n", "1"), check(table, "a", "v = :n", **nine)],
    )
    seed(moto_url, table, "after")
    records, next_iterator = stream.read(iterator)
    assert [(r["eventName"], r["dynamodb"]["Keys"]["pk"]["S"]) for r in records] == [("INSERT", "after")]
    assert int(records[0]["dynamodb"]["SequenceNumber"]) == int(last) + 1
    assert stream.read(next_iterator)[0] == []
    assert [i["pk"]["S"] for i in items(moto_url, table)] == ["a", "after"]


def test_a_validation_error_mid_way_undoes_the_actions_before_it(moto_url: str, table: str) -> None:
    """Given a, when a transaction upserts a new item and then ADDs a number to a's string
    attribute (a type error moto finds only once the upsert is applied), the transaction fails
    with ValidationException, as DynamoDB's does, and the upsert is undone."""
    client("dynamodb", moto_url).put_item(TableName=table, Item={**key("a"), "s": {"S": "text"}})
    stream = Stream(moto_url, table)
    before, records = items(moto_url, table), stream.all()
    error = cancelled(moto_url, [update(table, "new", "SET v = :n", "1"), update(table, "a", "ADD s :n", "1")])
    assert error.response["Error"]["Code"] == "ValidationException"
    assert items(moto_url, table) == before
    assert stream.all() == records


def test_two_actions_on_one_item_are_refused_and_nothing_is_applied(moto_url: str, table: str) -> None:
    seed(moto_url, table, "a")
    before, records = items(moto_url, table), Stream(moto_url, table).all()
    error = cancelled(moto_url, [put(table, "b"), delete(table, "a"), put(table, "a")])
    assert error.response["Error"]["Code"] == "ValidationException"
    assert items(moto_url, table) == before
    assert Stream(moto_url, table).all() == records


def test_a_successful_transaction_applies_every_action_and_streams_each(moto_url: str, table: str) -> None:
    seed(moto_url, table, "a", "d")
    stream = Stream(moto_url, table)
    seen = len(stream.all())
    client("dynamodb", moto_url).transact_write_items(
        TransactItems=[
            put(table, "c", ConditionExpression="attribute_not_exists(pk)"),
            update(table, "a", "SET v = v + :n", "1"),
            delete(table, "d"),
        ]
    )
    assert [(i["pk"]["S"], i["v"]["N"]) for i in items(moto_url, table)] == [("a", "2"), ("c", "1")]
    assert [r["eventName"] for r in stream.all()[seen:]] == ["INSERT", "MODIFY", "REMOVE"]


def test_transactions_track_no_instances(moto_url: str, table: str) -> None:
    """moto's registry would keep every Item, StreamRecord and Table ever created (copies too)."""
    seed(moto_url, table, "a")
    for n in range(20):
        cancelled(moto_url, [put(table, f"x{n}"), check(table, "a", "attribute_not_exists(pk)")])
    assert Table.instances_tracked == Item.instances_tracked == StreamRecord.instances_tracked == []  # type: ignore[attr-defined]


def test_only_the_newest_shard_iterators_are_kept(moto_url: str, table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(moto_patches, "MAX_SHARD_ITERATORS", 3)
    stream = Stream(moto_url, table)
    oldest = stream.iterator()
    newer = [stream.iterator() for _ in range(3)]
    with pytest.raises(ClientError) as raised:
        stream.read(oldest)
    assert raised.value.response["Error"]["Code"] == "ExpiredIteratorException"
    assert stream.read(newer[-1])[0] == []


def test_trimming_keeps_every_sequence_number_and_later_iterators(moto_url: str, table: str) -> None:
    seed(moto_url, table, "a", "b", "c", "d")
    stream = Stream(moto_url, table)
    sequences = [int(r["dynamodb"]["SequenceNumber"]) for r in stream.all()]
    kept_iterator = stream.iterator(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=str(sequences[1]))
    dropped = moto_patches.trim_table_stream(DEFAULT_ACCOUNT_ID, REGION, table, through=sequences[1], older_than_s=0)
    assert dropped == 2
    assert [int(r["dynamodb"]["SequenceNumber"]) for r in stream.all()] == sequences[2:]
    seed(moto_url, table, "e")
    records, _ = stream.read(kept_iterator)
    assert [int(r["dynamodb"]["SequenceNumber"]) for r in records] == [*sequences[2:], sequences[-1] + 1]
    assert moto_patches.table_stream_span(DEFAULT_ACCOUNT_ID, REGION, table) == (
        stream.shard, sequences[2], sequences[-1] + 2
    )  # fmt: skip
    assert moto_patches.trim_table_stream(DEFAULT_ACCOUNT_ID, REGION, table, sequences[-1], older_than_s=3600) == 0


def test_another_moto_is_refused_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    moto_patches.check_moto()  # the pinned one passes
    monkeypatch.setattr(moto_patches.moto, "__version__", "5.3.0")
    with pytest.raises(moto_patches.MotoPatchMismatch, match=r"patches moto 5\.2\.5, but moto 5\.3\.0"):
        moto_patches.check_moto()
    monkeypatch.setattr(moto_patches.moto, "__version__", moto_patches.PINNED_VERSION)
    name = "DynamoDBBackend.transact_write_items"
    monkeypatch.setitem(moto_patches.RELIED_ON, name, (moto_patches.RELIED_ON[name][0], "0" * 16))
    with pytest.raises(moto_patches.MotoPatchMismatch, match="transact_write_items"):
        moto_patches.check_moto()


def test_kinesis_pending_counts_the_records_after_each_shards_checkpoint(moto_url: str, aws_env: None) -> None:
    kinesis, name = client("kinesis", moto_url), f"s-{uuid.uuid4().hex[:8]}"
    kinesis.create_stream(StreamName=name, ShardCount=1)
    puts = [kinesis.put_record(StreamName=name, Data=b"x", PartitionKey="k") for _ in range(3)]
    shard = puts[0]["ShardId"]
    assert moto_patches.kinesis_pending(DEFAULT_ACCOUNT_ID, REGION, name, {}) == 3
    assert moto_patches.kinesis_pending(DEFAULT_ACCOUNT_ID, REGION, name, {shard: puts[0]["SequenceNumber"]}) == 2
    assert moto_patches.kinesis_pending(DEFAULT_ACCOUNT_ID, REGION, name, {shard: puts[2]["SequenceNumber"]}) == 0
