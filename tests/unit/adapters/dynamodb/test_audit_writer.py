"""A2/A3: audit items keyed for a time-ordered trail, idempotent, bounded under 400 KB, storing
nothing twice (what the key, the images and ``who`` give back is left out)."""

from __future__ import annotations

import json

import pytest

from mcp_platform.adapters.dynamodb import audit_writer as w
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.audit_writer import AuditWriter
from mcp_platform.adapters.dynamodb.stream_images import diff_stream_images, read_stream_change
from tests.support.session_stream import AUDIT_TABLE, MotoSessionTable, metadata_item

PK = ts.session_pk("s1")
DAY = 24 * 3600


def _write(writer: AuditWriter, record: dict) -> tuple[dict, bool]:
    change = read_stream_change(record)
    item = writer.build_item(change, lambda: diff_stream_images(change.old_image, change.new_image))
    return item, writer.put(item)


def test_a2_a3_item_is_keyed_by_session_time_and_sequence(tables: MotoSessionTable) -> None:
    # Given one real INSERT record and a writer with 30 days of retention
    tables.put(metadata_item("s1"))
    (record,) = tables.drain()
    writer = AuditWriter(tables.client, AUDIT_TABLE, retention_seconds=30 * DAY)
    # When it is audited
    item, written = _write(writer, record)
    # Then pk is the session, sk is "<ISO time>#<zero-padded SequenceNumber>", ttl = change + 30 d
    ddb = record["dynamodb"]
    change = read_stream_change(record)
    assert written
    assert item["pk"] == {"S": PK}
    assert item["sk"]["S"] == f"{change.change_time_iso}#{ddb['SequenceNumber'].zfill(40)}"
    assert int(item["ttl"]["N"]) == ddb["ApproximateCreationDateTime"] + 30 * DAY
    assert item[w.EVENT_NAME] == {"S": "INSERT"}
    assert item[w.WHO] == {"M": {"type": {"S": "Application"}}}
    assert item[w.NEW_IMAGE] == {"M": ddb["NewImage"]}  # the wire image, verbatim, as a map
    assert w.OLD_IMAGE not in item
    # And nothing stored twice: the diff (recomputed from the image), the sequence number and
    # change time (in the sort key), the item's key and owner (in the image), the TTL flag
    # (the event name and who) are left out, and the item gives each back
    assert not {w.DIFF, w.SEQUENCE, w.CHANGE_TIME, w.ITEM_SK, w.OWNER, w.TTL_EXPIRY} & item.keys()
    assert w.derived(item) == {
        "sequence_number": ddb["SequenceNumber"],
        "change_time": change.change_time_iso,
        "item": "metadata",
        "owner": "principal-1",
        "ttl_expiry": False,
    }


def test_a3_what_the_item_would_not_give_back_exactly_is_stored(tables: MotoSessionTable) -> None:
    # Given an item holding binary, a set, and maps nested 31 deep, whose version is bumped
    deep: dict = {"S": "bottom"}
    for level in range(31):
        deep = {"M": {f"level{level}": deep}}
    extra = {"raw_bytes": {"B": b"\x00\xff"}, "tag_set": {"SS": ["b", "a"]}, "nested_deep": deep}
    tables.put(metadata_item("s1", extra=extra))
    tables.update(PK, ts.METADATA_SK, "SET version = version + :one", {":one": {"N": "1"}})
    _, modify = tables.drain()
    # And the same change delivered with a sequence number the sort key pads (leading zeros)
    padded = {
        **modify,
        "dynamodb": {**modify["dynamodb"], "SequenceNumber": "0" + modify["dynamodb"]["SequenceNumber"]},
    }
    writer = AuditWriter(tables.client, AUDIT_TABLE)
    # When both are audited
    item, _ = _write(writer, modify)
    padded_item, _ = _write(writer, padded)
    # Then images a map would not keep exactly stay DynamoDB-JSON text, verbatim (and with them
    # whole, the diff is still left out), and the leading zeros keep their sequence number stored
    assert json.loads(item[w.OLD_IMAGE]["S"]) == modify["dynamodb"]["OldImage"]
    assert json.loads(item[w.NEW_IMAGE]["S"]) == modify["dynamodb"]["NewImage"]
    assert w.DIFF not in item and w.SEQUENCE not in item
    assert padded_item[w.SEQUENCE] == {"S": padded["dynamodb"]["SequenceNumber"]}


def test_a3_a_writer_bounding_diffs_otherwise_than_the_trail_stores_them(tables: MotoSessionTable) -> None:
    # Given a writer whose diff limit is not the trail's
    tables.put(metadata_item("s1"))
    (record,) = tables.drain()
    writer = AuditWriter(tables.client, AUDIT_TABLE, diff_limit=50_000)
    # When a change is audited, Then its diff is stored (the trail would bound it otherwise)
    item, _ = _write(writer, record)
    assert json.loads(item[w.DIFF]["S"])["added"]["version"] == 1


def test_a2_duplicate_record_is_a_silent_success_with_one_item(tables: MotoSessionTable) -> None:
    # Given a record already audited
    tables.put(metadata_item("s1"))
    (record,) = tables.drain()
    writer = AuditWriter(tables.client, AUDIT_TABLE)
    _, first = _write(writer, record)
    # When the same record is delivered again
    _, second = _write(writer, record)
    # Then the second write reports a duplicate without raising, and one audit item exists
    assert (first, second) == (True, False)
    assert len(tables.audit_items("s1")) == 1


def test_a2_sort_key_orders_by_sequence_within_one_second() -> None:
    # Given two sequence numbers of different lengths in the same second (string order differs)
    early, late = "9" * 21, "1" + "0" * 21
    # When they are made into audit sort keys
    keys = [ts.audit_sk("2026-11-29T10:00:00.000Z", seq) for seq in (late, early)]
    # Then string order of the keys equals numeric order of the sequence numbers
    assert sorted(keys) == [keys[1], keys[0]]


def test_a3_large_images_are_summarised_and_item_stays_under_400kb(tables: MotoSessionTable) -> None:
    # Given a session item of ~300 KB (context of 100 x 3 KB) whose version is then bumped
    big = [{"M": {"content": {"S": "x" * 3000}}} for _ in range(100)]
    tables.put(metadata_item("s1", extra={ts.CONTEXT: {"L": big}}))
    tables.update(PK, ts.METADATA_SK, "SET version = version + :one", {":one": {"N": "1"}})
    _, modify = tables.drain()
    writer = AuditWriter(tables.client, AUDIT_TABLE)
    # When the MODIFY (both images ~300 KB) is audited
    item, written = _write(writer, modify)
    # Then both images are summaries (small scalars kept, the list sized), the diff is exact,
    # and DynamoDB (moto enforces 400 KB) accepted the item
    assert written
    old = json.loads(item[w.OLD_IMAGE]["S"])
    assert old["_summary"] == "image" and old["bytes"] > 300_000
    assert old["kept"]["version"] == {"N": "1"}
    assert old["sized"]["context"]["type"] == "L"
    assert json.loads(item[w.DIFF]["S"])["changed"] == {"version": {"old": 1, "new": 2}}
    assert sum(len(k) + len(json.dumps(v)) for k, v in item.items()) < 20_000


def test_a3_writer_refuses_limits_that_could_exceed_the_item_limit() -> None:
    # Given image limits that allow two 200 KB images plus a diff
    # When / Then the writer refuses to be built
    with pytest.raises(ValueError, match="400 KB"):
        AuditWriter(object(), AUDIT_TABLE, image_limit=200_000)
