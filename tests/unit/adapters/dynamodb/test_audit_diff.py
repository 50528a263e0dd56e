"""A3: field-level diff of real stream images (moto), exact for the D2/D3 update shapes."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.sessions import SessionChanges, SessionStore, ToolCall
from mcp_platform.adapters.dynamodb.stream_images import diff_stream_images, image_to_plain
from mcp_platform.application.audit.diff import APPENDED_INLINE_ITEMS, dumps
from mcp_platform.protocol.tools import APPEND_ONLY
from tests.support.session_stream import SESSION_TABLE, MotoSessionTable, metadata_item

PK = ts.session_pk("s1")


def _message(i: int, size: int = 10) -> dict:
    return {"M": {"role": {"S": "assistant"}, "content": {"S": f"m{i}-" + "x" * size}}}


def test_a3_version_bump_plus_context_append_is_exact(tables: MotoSessionTable) -> None:
    # Given a session with one context message at version 1
    tables.put(metadata_item("s1", version=1))
    tables.drain()
    # When an optimistic-locked update bumps the version and list_appends one message (D2 + D3)
    tables.update(
        PK,
        ts.METADATA_SK,
        "SET version = version + :one, context = list_append(if_not_exists(context, :empty), :new)",
        {":one": {"N": "1"}, ":empty": {"L": []}, ":new": {"L": [_message(1)]}},
    )
    (record,) = tables.drain()
    diff = diff_stream_images(record["dynamodb"]["OldImage"], record["dynamodb"]["NewImage"])
    # Then the diff is exactly: version 1 -> 2, and context +1 appended item, nothing else
    assert record["eventName"] == "MODIFY"
    assert diff.to_dict() == {
        "added": {},
        "removed": {},
        "changed": {"version": {"old": Decimal(1), "new": Decimal(2)}},
        "lists": {
            "context": {
                "op": "append",
                "before_count": 1,
                "after_count": 2,
                "appended_count": 1,
                "appended_bytes": len(dumps([{"role": "assistant", "content": "m1-" + "x" * 10}])),
                "appended": [{"role": "assistant", "content": "m1-" + "x" * 10}],
            }
        },
    }
    # and it serialises Decimal-safe (integral numbers stay ints)
    assert '"new":2' in dumps(diff.to_dict())


def test_a3_large_context_append_is_summarised_not_copied(tables: MotoSessionTable) -> None:
    # Given a session whose context already holds 50 messages
    tables.put(metadata_item("s1", extra={ts.CONTEXT: {"L": [_message(i, 200) for i in range(50)]}}))
    tables.drain()
    # When more messages are appended than may be copied inline
    new = [_message(100 + i, 200) for i in range(APPENDED_INLINE_ITEMS + 1)]
    tables.update(PK, ts.METADATA_SK, "SET context = list_append(context, :new)", {":new": {"L": new}})
    (record,) = tables.drain()
    change = diff_stream_images(record["dynamodb"]["OldImage"], record["dynamodb"]["NewImage"]).lists["context"]
    # Then only counts and sizes are kept: neither the list nor the appended items are copied
    assert change["op"] == "append"
    assert (change["before_count"], change["after_count"], change["appended_count"]) == (50, 61, 11)
    assert "appended" not in change and change["appended_bytes"] > 11 * 200
    assert len(dumps(change)) < 200


def test_a3_insert_and_remove_report_added_and_removed(tables: MotoSessionTable) -> None:
    # Given a tool record written then deleted
    tables.put({"pk": {"S": PK}, "sk": {"S": "tool#2026-11-29T10:00:00Z#c1"}, "n": {"N": "1.5"}})
    tables.delete(PK, "tool#2026-11-29T10:00:00Z#c1")
    insert, remove = tables.drain()
    # When each record is diffed
    added = diff_stream_images(None, insert["dynamodb"]["NewImage"])
    removed = diff_stream_images(remove["dynamodb"]["OldImage"], None)
    # Then INSERT lists every attribute as added and REMOVE every attribute as removed
    assert set(added.added) == {"pk", "sk", "n"} and not (added.removed or added.changed)
    assert set(removed.removed) == {"pk", "sk", "n"} and not (removed.added or removed.changed)
    assert dumps(added.added["n"]) == "1.5"


def test_a3_context_rewrite_truncate_and_unchanged() -> None:
    # Given list values that were rewritten, truncated, or left alone
    one, two, three = _message(1), _message(2), _message(3)
    rewrite = diff_stream_images({"context": {"L": [one, two]}}, {"context": {"L": [one, three, two]}})
    truncate = diff_stream_images({"context": {"L": [one, two, three]}}, {"context": {"L": [one]}})
    same = diff_stream_images({"context": {"L": [one]}, "v": {"N": "1"}}, {"context": {"L": [one]}, "v": {"N": "1"}})
    # Then each is summarised by what happened, and an unchanged image gives an empty diff
    assert rewrite.lists["context"] == {"op": "rewrite", "before_count": 2, "after_count": 3, "common_prefix": 1}
    assert truncate.lists["context"]["op"] == "truncate"
    assert truncate.lists["context"]["removed_count"] == 2
    assert same.is_empty


def test_a3_large_changed_value_is_bounded_and_types_are_json_safe() -> None:
    # Given a changed attribute far above the value limit, and binary/set/fraction values
    big_old, big_new = {"S": "a" * 10_000}, {"S": "b" * 10_000}
    image: dict[str, Any] = {"b": {"B": "AAE="}, "ss": {"SS": ["y", "x"]}, "f": {"N": "0.25"}}
    diff = diff_stream_images({"blob": big_old}, {"blob": big_new, **image})
    # Then the large value is a size + hash summary and the rest serialises to plain JSON
    assert diff.changed["blob"]["old"]["_summary"] == "S"
    assert diff.changed["blob"]["new"]["bytes"] == 10_002
    assert diff.changed["blob"]["old"]["sha256"] != diff.changed["blob"]["new"]["sha256"]
    assert dumps(image_to_plain(image)) == '{"b":"AAE=","f":0.25,"ss":["x","y"]}'


def test_a3_a_commits_context_item_audits_as_the_entries_it_added(tables: MotoSessionTable) -> None:
    """A3 with D1/D3 as amended: Given a session, When a tool call appends a note, Then its
    context item's INSERT audits as the entry added (``lists.context``, op "added", the entry
    inline), and the metadata's MODIFY as its version, counts and sizes, never the context."""
    store = SessionStore(SESSION_TABLE, client=tables.client)
    session = store.create_session("alice")
    tables.drain()
    note = {"role": "note", "text": "hello"}
    store.commit(
        session,
        ToolCall("c1", "append_note", {"text": "hello"}, {"ok": 1}),
        SessionChanges(APPEND_ONLY, context_append=[note]),
    )
    diffs = {
        record["dynamodb"]["Keys"]["sk"]["S"].split("#")[0]: diff_stream_images(
            record["dynamodb"].get("OldImage"), record["dynamodb"].get("NewImage")
        )
        for record in tables.drain()
    }
    assert set(diffs) == {"tool", "toolcall", "metadata", "ctx"}
    assert diffs["ctx"].lists == {
        "context": {"op": "added", "items_count": 1, "items_bytes": len(dumps([note])), "items": [note]}
    }
    metadata = diffs["metadata"]
    assert "context" not in metadata.lists and "context" not in metadata.added
    assert metadata.added[ts.CONTEXT_ITEMS] == 1 and metadata.added[ts.CONTEXT_BYTES] > 0
    assert metadata.changed["version"] == {"old": Decimal(1), "new": Decimal(2)}
