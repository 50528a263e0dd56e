"""A3 with nothing stored twice: every recorded layout of the audit item reads back as recorded.

The recordings (tests/support/audit_formats.py) hold representative stream records (the
platform's own writes and edge changes), the audit item the recording release wrote for each and
what the trail read from it. Today's audit function writes its own items from the same records;
they must read through today's trail exactly as the recorded ones did, and so must the recorded
items themselves (an upgrade, not a migration). A recomputation that differs from the writer's
diff in any rule (the summarised lists, the value bound, a summary's stored diff) is caught."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_platform.adapters.dynamodb import audit_trail
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.audit_writer import AuditWriter
from mcp_platform.adapters.dynamodb.codec import item_size
from mcp_platform.adapters.dynamodb.session_remains import SessionRemains
from mcp_platform.adapters.dynamodb.stream_images import STREAM_IMAGES, diff_stream_images, read_stream_change
from mcp_platform.application.audit.diff import diff_images
from mcp_platform.application.audit.expiry import SessionExpiryHandler
from mcp_platform.application.audit.processor import AuditProcessor
from tests.support.audit_formats import load, recorded_layouts
from tests.support.session_stream import AUDIT_TABLE, SESSION_TABLE, MotoSessionTable


class Events:
    def publish(self, event: object) -> None:
        pass


def _units(item: dict[str, Any]) -> int:
    return max(1, math.ceil(item_size(item) / 1024))


def _key(case: dict[str, Any]) -> dict[str, Any]:
    change = read_stream_change(case["record"])
    return {
        ts.AUDIT_PK: {"S": change.pk},
        ts.AUDIT_SK: {"S": ts.audit_sk(change.change_time_iso, change.sequence_number)},
    }


def _audit_today(tables: MotoSessionTable, cases: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """Each case's record through today's audit function: the item it wrote (None: skipped)."""
    writer = AuditWriter(tables.client, AUDIT_TABLE)
    expiry = SessionExpiryHandler(SessionRemains(tables.client, SESSION_TABLE), writer, Events())
    processor = AuditProcessor(read_stream_change, STREAM_IMAGES, writer, expiry)
    items: list[dict[str, Any] | None] = []
    for case in cases:
        outcome = processor.process(case["record"])
        if outcome.action == "skipped":
            items.append(None)
            continue
        got = tables.client.get_item(TableName=AUDIT_TABLE, Key=_key(case), ConsistentRead=True)
        items.append(got["Item"])
    return items


Read = dict[tuple[str, str], dict[str, Any]]


def _trail(tables: MotoSessionTable, cases: list[dict[str, Any]]) -> Read:
    """Every audited session's trail read back (the Query the tool and ops run), by session and
    sequence number."""
    read: Read = {}
    sessions = {read_stream_change(case["record"]).session_id for case in cases} - {None}
    trail = audit_trail.AuditTrail(tables.client, AUDIT_TABLE)
    for session_id in sorted(s for s in sessions if s is not None):
        cursor = None
        while True:
            page = trail.session_trail(session_id, limit=100, cursor=cursor)
            read.update({(session_id, record["sequence_number"]): record for record in page.records})
            if (cursor := page.next_cursor) is None:
                break
    return read


def _mismatches(cases: list[dict[str, Any]], read: Read) -> list[str]:
    wanted = {
        (read_stream_change(c["record"]).session_id, c["trail"]["sequence_number"]): c["trail"]
        for c in cases
        if c["trail"] is not None
    }
    assert read.keys() == wanted.keys()
    return [f"{key} {wanted[key]['item']}" for key in wanted if read[key] != wanted[key]]


LAYOUTS = recorded_layouts()


@pytest.mark.parametrize("path", LAYOUTS, ids=lambda path: path.name)
def test_a_recorded_layouts_items_read_as_they_did(tables: MotoSessionTable, path: Path) -> None:
    # Given the items a previous layout wrote, as stored
    cases = load(path)["cases"]
    for case in cases:
        if case["item"] is not None:
            tables.client.put_item(TableName=AUDIT_TABLE, Item=case["item"])
    # When today's trail reads them, Then each record is what that layout's trail returned
    assert _mismatches(cases, _trail(tables, cases)) == []


@pytest.mark.parametrize("path", LAYOUTS, ids=lambda path: path.name)
def test_todays_items_of_the_same_changes_read_the_same_and_are_no_larger(tables: MotoSessionTable, path: Path) -> None:
    # Given the recorded changes audited by today's audit function
    cases = load(path)["cases"]
    items = _audit_today(tables, cases)
    # Then the same records are audited, and each reads back exactly as recorded
    assert [item is None for item in items] == [case["item"] is None for case in cases]
    assert _mismatches(cases, _trail(tables, cases)) == []
    # And no item is billed more write units than the recorded one, and the platform's own
    # writes (a committed tool call's record, marker, context item, metadata) fewer in total
    pairs = [(case, item) for case, item in zip(cases, items, strict=True) if item is not None]
    assert all(_units(item) <= _units(case["item"]) for case, item in pairs)
    platform = [(case, item) for case, item in pairs if "#edge-" not in case["record"]["dynamodb"]["Keys"]["pk"]["S"]]
    assert sum(_units(item) for _, item in platform) < sum(_units(case["item"]) for case, _ in platform)
    # And only an item whose images are not both kept whole stores its diff
    for case, item in pairs:
        texts = [item.get(name, {}).get("S", "") for name in ("old_image", "new_image")]
        summarised = any('"_summary"' in text for text in texts)
        assert ("diff" in item) == summarised, case["trail"]["item"]


def _no_summarised_lists(old: Any, new: Any, **options: Any) -> Any:
    return diff_images(old, new, codec=STREAM_IMAGES, summarised_lists=(), **options)


def _wider_values(old: Any, new: Any, **options: Any) -> Any:
    return diff_stream_images(old, new, value_limit=100_000)


def _images_swapped(old: Any, new: Any, **options: Any) -> Any:
    return diff_stream_images(new, old, **options)


@pytest.mark.parametrize("wrong", [_no_summarised_lists, _wider_values, _images_swapped])
def test_a_wrong_recomputation_is_caught(
    tables: MotoSessionTable, monkeypatch: pytest.MonkeyPatch, wrong: Callable[..., Any]
) -> None:
    # Given the recorded changes audited by today's audit function
    cases = load(LAYOUTS[-1])["cases"]
    _audit_today(tables, cases)
    # When the trail recomputes the diffs the items leave out by a rule not the writer's
    monkeypatch.setattr(audit_trail, "diff_stream_images", wrong)
    # Then the comparison finds records that no longer read as recorded
    assert _mismatches(cases, _trail(tables, cases)) != []


def test_stored_diffs_are_used_as_stored(tables: MotoSessionTable, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the recorded layout's items (every one stores its diff)
    cases = load(LAYOUTS[0])["cases"]
    for case in cases:
        if case["item"] is not None:
            tables.client.put_item(TableName=AUDIT_TABLE, Item=case["item"])

    def never(*_: Any, **__: Any) -> Any:
        raise AssertionError("a stored diff is not recomputed")

    # When they are read with recomputation unavailable, Then they read as recorded
    monkeypatch.setattr(audit_trail, "diff_stream_images", never)
    assert _mismatches(cases, _trail(tables, cases)) == []


def test_the_previous_layout_is_written_item_for_item_as_its_release_wrote_it(tables: MotoSessionTable) -> None:
    """Two versions at once: while release 0.1 may still serve (``compatible_with=0.1``), the audit
    function writes what that release's trail reads. Given the changes recorded with 0.1's items,
    When today's writer in the previous layout audits them, Then each item is the one 0.1 wrote."""
    (path,) = [path for path in LAYOUTS if path.name.startswith("audit_v0.1.0")]
    cases = load(path)["cases"]
    writer = AuditWriter(tables.client, AUDIT_TABLE, previous_layout=True)
    for case in cases:
        if case["item"] is None:
            continue
        change = read_stream_change(case["record"])
        item = writer.build_item(change, lambda change=change: diff_stream_images(change.old_image, change.new_image))
        assert item == case["item"], case["trail"]["item"]
