"""A3: a session's trail reads back in change order, a page at a time, with an opaque cursor."""

from __future__ import annotations

import base64
import json

import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.audit_trail import AuditTrail
from mcp_platform.adapters.dynamodb.audit_writer import AuditWriter
from mcp_platform.adapters.dynamodb.session_remains import SessionRemains
from mcp_platform.adapters.dynamodb.stream_images import STREAM_IMAGES, read_stream_change
from mcp_platform.application.audit.expiry import SessionExpiryHandler
from mcp_platform.application.audit.processor import AuditProcessor
from mcp_platform.application.audit.trail import InvalidCursor
from tests.support.session_stream import AUDIT_TABLE, SESSION_TABLE, MotoSessionTable, metadata_item

PK = ts.session_pk("s1")


class NoPublisher:
    def publish(self, event: object) -> None:
        raise AssertionError("no expiry in this test")


def _audit_history(tables: MotoSessionTable, updates: int) -> list[str]:
    """Session s1 created then bumped ``updates`` times, plus noise in s2; returns s1's sequence."""
    tables.put(metadata_item("s1"))
    tables.put(metadata_item("s2"))
    for _ in range(updates):
        tables.update(PK, ts.METADATA_SK, "SET version = version + :one", {":one": {"N": "1"}})
    records = tables.drain()
    writer = AuditWriter(tables.client, AUDIT_TABLE)
    processor = AuditProcessor(
        read_stream_change,
        STREAM_IMAGES,
        writer,
        SessionExpiryHandler(SessionRemains(tables.client, SESSION_TABLE), writer, NoPublisher()),
    )
    for record in reversed(records):  # arrival order must not matter for the trail's order
        processor.process(record)
    writer.put_summary("s1", {"session_id": "s1"}, 0)  # not part of the trail
    return [r["dynamodb"]["SequenceNumber"] for r in records if r["dynamodb"]["Keys"]["pk"]["S"] == PK]


def test_a3_trail_pages_in_change_order_until_no_cursor(tables: MotoSessionTable) -> None:
    # Given seven audited changes of s1 (audited out of order) and a summary item
    expected = _audit_history(tables, updates=6)
    trail = AuditTrail(tables.client, AUDIT_TABLE)
    # When the trail is read three records at a time
    pages, cursor = [], None
    while True:
        page = trail.session_trail("s1", limit=3, cursor=cursor)
        pages.append(page.records)
        cursor = page.next_cursor
        if cursor is None:
            break
    # Then pages are 3, 3, 1 records, oldest first, the summary excluded, and the last has no cursor
    assert [len(p) for p in pages] == [3, 3, 1]
    records = [r for p in pages for r in p]
    assert [r["sequence_number"] for r in records] == expected
    assert [r["new_image"]["version"] for r in records] == list(range(1, 8))
    assert records[0]["event_name"] == "INSERT" and records[0]["old_image"] is None
    assert {r["owner"] for r in records} == {"principal-1"}
    assert records[1]["diff"]["changed"] == {"version": {"old": 1, "new": 2}}
    json.dumps(records)  # JSON-safe as returned to MCP callers


def test_a3_exact_page_boundary_has_no_dangling_cursor(tables: MotoSessionTable) -> None:
    # Given exactly four audited changes
    _audit_history(tables, updates=3)
    # When a page of four is read
    page = AuditTrail(tables.client, AUDIT_TABLE).session_trail("s1", limit=4)
    # Then it holds all four and no cursor to an empty page
    assert len(page.records) == 4 and page.next_cursor is None


def test_a3_cursor_is_bound_to_its_session_and_limits_are_checked(tables: MotoSessionTable) -> None:
    # Given a cursor issued for s1's trail
    _audit_history(tables, updates=2)
    trail = AuditTrail(tables.client, AUDIT_TABLE)
    cursor = trail.session_trail("s1", limit=1).next_cursor
    assert cursor is not None
    # When it is replayed against s2, or garbage / out-of-range limits are passed
    # Then each is refused
    with pytest.raises(InvalidCursor):
        trail.session_trail("s2", cursor=cursor)
    with pytest.raises(InvalidCursor):
        trail.session_trail("s1", cursor="not-a-cursor!")
    for limit in (0, 101):
        with pytest.raises(ValueError, match="limit"):
            trail.session_trail("s1", limit=limit)


@pytest.mark.parametrize("key", ["2026-11-29T10:10:00.000Z#" + "9" * 2000, "2026", "x" * 300])
def test_a3_a_cursor_for_a_key_the_trail_never_issued_is_refused_before_any_read(key: str) -> None:
    """A cursor bound to the right session but carrying a forged key (2,000 digits: real DynamoDB
    refuses such an ExclusiveStartKey, a 5xx) is refused without a query."""
    raw = json.dumps({"s": "s1", "k": key}, separators=(",", ":")).encode()
    cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    with pytest.raises(InvalidCursor):
        AuditTrail(object(), AUDIT_TABLE).session_trail("s1", cursor=cursor)


def test_a3_trail_returns_summarised_images_of_large_items(tables: MotoSessionTable) -> None:
    # Given an audited INSERT of a ~150 KB session item (above the per-image limit)
    big = [{"M": {"content": {"S": "x" * 3000}}} for _ in range(50)]
    tables.put(metadata_item("s1", extra={ts.CONTEXT: {"L": big}}))
    writer = AuditWriter(tables.client, AUDIT_TABLE)
    processor = AuditProcessor(
        read_stream_change,
        STREAM_IMAGES,
        writer,
        SessionExpiryHandler(SessionRemains(tables.client, SESSION_TABLE), writer, NoPublisher()),
    )
    processor.process(tables.drain()[0])
    # When the trail is read
    (record,) = AuditTrail(tables.client, AUDIT_TABLE).session_trail("s1").records
    # Then the image is the bounded summary, with its small scalars as plain values
    assert record["new_image"]["_summary"] == "image"
    assert record["new_image"]["kept"]["version"] == 1
    assert record["new_image"]["sized"]["context"]["type"] == "L"
