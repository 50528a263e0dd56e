"""A4 locally: the emulated TTL sweeper deletes due items; its REMOVE records name the TTL service.

moto never expires items and puts no ``userIdentity`` on REMOVE records. The sweeper deletes
what is due and the table-stream source (the local poller's, as used by ``python -m local``)
delivers those REMOVE records with AWS's TTL identity; explicit deletes keep none. moto runs
in-process here; the records are read back through the real ``TableStreamShards``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local.bootstrap import LocalOptions
from local.pollers import ShardInfo, TableStreamShards
from local.ttl import MAX_PAST_S, TtlDeletions, TtlSweeper
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.stream_images import read_stream_change

TABLE = "sessions"
NOW = 1_795_000_000
# What AWS puts on the stream record of a TTL deletion (written out, not imported: the emulation
# is checked against the AWS shape, not against itself).
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


class Emulated:
    def __init__(self) -> None:
        self.dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        self.streams = boto3.client("dynamodbstreams", region_name="us-east-1")
        created = self.dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
        self.deletions = TtlDeletions()
        self.source = TableStreamShards(
            self.streams, created["TableDescription"]["LatestStreamArn"], ttl_deletions=self.deletions
        )

    def sweeper(self, dynamodb: Any = None) -> TtlSweeper:
        return TtlSweeper(
            dynamodb or self.dynamodb, TABLE, ts.TTL, ("pk", "sk"), self.deletions, interval_s=1, clock=lambda: NOW
        )

    def put(self, pk: str, sk: str, ttl: dict[str, str] | None = None, **extra: dict[str, str]) -> None:
        item: dict[str, Any] = {"pk": {"S": pk}, "sk": {"S": sk}, **extra}
        if ttl is not None:
            item[ts.TTL] = ttl
        self.dynamodb.put_item(TableName=TABLE, Item=item)

    def item_keys(self) -> set[tuple[str, str]]:
        items = self.dynamodb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
        return {(i["pk"]["S"], i["sk"]["S"]) for i in items}

    def removes(self) -> dict[str, dict[str, Any]]:
        """The REMOVE records as the local poller delivers them, by pk of the removed item."""
        (shard,) = self.source.shards()
        page = self.source.read(ShardInfo(shard.shard_id), None, 1000)
        return {r["dynamodb"]["Keys"]["pk"]["S"]: r for r in page.records if r["eventName"] == "REMOVE"}


@pytest.fixture
def emulated(aws_env: None) -> Iterator[Emulated]:
    with mock_aws():
        yield Emulated()


def n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def test_a4_sweeper_deletes_only_items_whose_ttl_is_due(emulated: Emulated) -> None:
    """Given items expired, due this second, live, without ttl, with a non-number ttl, with a
    ttl older than five years (DynamoDB ignores those) and with a millisecond ttl, when one
    sweep runs, then exactly the expired and the due item are gone."""
    emulated.put("session#expired", ts.METADATA_SK, n(NOW - 10))
    emulated.put("session#due", ts.METADATA_SK, n(NOW))
    emulated.put("session#live", ts.METADATA_SK, n(NOW + 3600))
    emulated.put("session#no-ttl", "tool#2026-11-29T10:00:00.000000Z#c1")
    emulated.put("session#text-ttl", ts.METADATA_SK, {"S": str(NOW - 10)})
    emulated.put("session#ancient", ts.METADATA_SK, n(NOW - MAX_PAST_S - 1))
    emulated.put("session#millis", ts.METADATA_SK, n(NOW * 1000))
    assert emulated.sweeper().sweep_once() == 2
    assert {pk for pk, _ in emulated.item_keys()} == {
        "session#live",
        "session#no-ttl",
        "session#text-ttl",
        "session#ancient",
        "session#millis",
    }


def test_a4_ttl_removes_carry_the_service_identity_and_explicit_deletes_do_not(emulated: Emulated) -> None:
    """Given an expired session and a live item deleted explicitly, when the sweeper runs and
    the stream is read by the local poller's source, then the sweeper's REMOVE carries
    ``{"type": "Service", "principalId": "dynamodb.amazonaws.com"}`` and is a session expiry
    to the audit (A4), while the explicit REMOVE has no userIdentity and is not."""
    emulated.put("session#s1", ts.METADATA_SK, n(NOW - 1), owner={"S": "alice"})
    emulated.put("session#s2", ts.METADATA_SK, n(NOW + 3600))
    emulated.dynamodb.delete_item(TableName=TABLE, Key={"pk": {"S": "session#s2"}, "sk": {"S": ts.METADATA_SK}})
    emulated.sweeper().sweep_once()
    removes = emulated.removes()
    assert removes["session#s1"]["userIdentity"] == TTL_IDENTITY
    assert "userIdentity" not in removes["session#s2"]
    assert read_stream_change(removes["session#s1"]).is_session_expiry
    assert not read_stream_change(removes["session#s2"]).is_ttl_removal
    assert emulated.deletions.owed == 0  # every sweeper delete was matched to its record


def test_a4_a_re_read_batch_keeps_the_ttl_identity(emulated: Emulated) -> None:
    """Given a swept item whose REMOVE was delivered once, when the poller re-reads the batch
    from the same checkpoint (as after a failed poll), then the record still carries it."""
    emulated.put("session#s1", ts.METADATA_SK, n(NOW - 1))
    emulated.sweeper().sweep_once()
    first, again = emulated.removes(), emulated.removes()
    assert first["session#s1"]["userIdentity"] == again["session#s1"]["userIdentity"] == TTL_IDENTITY


def test_a4_earlier_explicit_delete_of_the_same_key_stays_explicit(emulated: Emulated) -> None:
    """Given an item deleted explicitly, then written again and swept, when the stream is read,
    then only the second REMOVE (the sweeper's, whose old image it matches) is a TTL deletion."""
    emulated.put("session#s1", ts.METADATA_SK, n(NOW + 3600), note={"S": "first"})
    emulated.dynamodb.delete_item(TableName=TABLE, Key={"pk": {"S": "session#s1"}, "sk": {"S": ts.METADATA_SK}})
    emulated.put("session#s1", ts.METADATA_SK, n(NOW - 1), note={"S": "second"})
    emulated.sweeper().sweep_once()
    (shard,) = emulated.source.shards()
    records = emulated.source.read(ShardInfo(shard.shard_id), None, 1000).records
    removes = [r for r in records if r["eventName"] == "REMOVE"]
    assert [r["dynamodb"]["OldImage"]["note"]["S"] for r in removes] == ["first", "second"]
    assert ["userIdentity" in r for r in removes] == [False, True]


class RefreshAfterScan:
    """The session is used (sliding expiry, D7) between the sweeper's scan and its delete."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def scan(self, **request: Any) -> Any:
        page = self._client.scan(**request)
        self._client.update_item(
            TableName=TABLE,
            Key={"pk": {"S": "session#s1"}, "sk": {"S": ts.METADATA_SK}},
            UpdateExpression="SET #ttl = :later",
            ExpressionAttributeNames={"#ttl": ts.TTL},
            ExpressionAttributeValues={":later": n(NOW + 3600)},
        )
        return page


def test_a4_item_refreshed_after_the_scan_is_not_deleted(emulated: Emulated) -> None:
    """Given an expired item whose ttl is extended after the sweeper found it, when the sweep
    deletes, then the item stays (the delete is conditioned on the ttl seen) and no TTL
    deletion is owed to the stream."""
    emulated.put("session#s1", ts.METADATA_SK, n(NOW - 1))
    assert emulated.sweeper(RefreshAfterScan(emulated.dynamodb)).sweep_once() == 0
    assert ("session#s1", ts.METADATA_SK) in emulated.item_keys()
    assert emulated.deletions.owed == 0


@pytest.mark.parametrize(("raw", "expected"), [("", 5.0), ("1.5", 1.5), ("0", 0.0)])
def test_sweep_interval_comes_from_local_ttl_sweep_seconds(
    monkeypatch: pytest.MonkeyPatch, raw: str, expected: float
) -> None:
    monkeypatch.setenv("LOCAL_TTL_SWEEP_SECONDS", raw)
    assert LocalOptions.from_env(attach=False).ttl_sweep_s == expected


@pytest.mark.parametrize("raw", ["-1", "soon", "nan", "7200"])
def test_invalid_sweep_interval_stops_start_up_naming_the_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("LOCAL_TTL_SWEEP_SECONDS", raw)
    with pytest.raises(SystemExit, match="LOCAL_TTL_SWEEP_SECONDS"):
        LocalOptions.from_env(attach=False)
