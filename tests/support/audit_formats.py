"""What the audit function stores per change, recorded once, so later layouts prove they read alike.

A recording holds representative session-table stream records, the audit item the audit function
of the recording release wrote for each (None: the record is not a session's, never audited), and
what reading that item back through the trail returned (``audit_trail.to_record``). It is
committed, one file per layout (gzipped JSON: the large values repeat), and never regenerated:
tests/unit/adapters/dynamodb/test_audit_stored_layout.py replays the records through today's
audit function and reads both today's items and the recorded ones through today's trail; each
must read exactly as recorded.

The records are the platform's own writes, as the aws benchmark makes them (a 2026 session
opened, append-only and read-modify-write tool calls committed with their markers, context items
and metadata changes, plus a usage counter and an ingest dedupe marker, which are not audited),
and changes made here on a moto table for what those do not reach: a metadata item from before
context items (its list appended to, then cut), values too large to copy, an image too large to
keep, a diff too large to keep, binary and set values, deep nesting, text beyond ASCII, an
explicit delete and a TTL expiry. Recording a new file:

    PYTHONPATH=.:layers/platform/python:functions/endpoint:bench \\
        .venv/bin/python -m tests.support.audit_formats NAME
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts

FORMATS_DIR = Path(__file__).resolve().parent / "recorded_formats"
BENCH_KINDS = {  # (eventName, key prefix) -> how many of the aws benchmark's records to keep
    ("INSERT", "metadata"): 1,
    ("MODIFY", "metadata"): 3,
    ("INSERT", "tool"): 2,
    ("INSERT", "toolcall"): 2,
    ("INSERT", "ctx"): 2,
    ("INSERT", "usage"): 1,
    ("INSERT", "event"): 1,
}


def recorded_layouts() -> list[Path]:
    return sorted(FORMATS_DIR.glob("audit_*.json.gz"))


def load(path: Path) -> dict[str, Any]:
    recorded: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    return recorded


def _bench_records() -> list[dict[str, Any]]:
    """Stream records of the platform's own writes, from the aws benchmark's measurement."""
    import bench_aws_calls

    captured: list[dict[str, Any]] = []
    run = bench_aws_calls.Audit.run

    def capture(self: Any, records: list[dict[str, Any]], **options: Any) -> Any:
        captured.extend(records)
        return run(self, records, **options)

    bench_aws_calls.Audit.run = capture  # type: ignore[method-assign]
    try:
        bench_aws_calls.measure()
    finally:
        bench_aws_calls.Audit.run = run  # type: ignore[method-assign]
    kept: list[dict[str, Any]] = []
    left = dict(BENCH_KINDS)
    seen: set[str] = set()
    for record in captured:
        keys = record["dynamodb"]["Keys"]
        prefix = (keys["sk"]["S"] if keys["pk"]["S"].startswith(ts.SESSION_PREFIX) else keys["pk"]["S"]).split("#")[0]
        kind = (record["eventName"], prefix)
        image = record["dynamodb"].get("NewImage") or record["dynamodb"].get("OldImage") or {}
        shape = f"{kind} {len(json.dumps(image))}"  # records of one kind and size look alike
        if left.get(kind, 0) > 0 and shape not in seen:
            seen.add(shape)
            left[kind] -= 1
            kept.append(record)
    return kept


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"S": "bottom"}
    for level in range(depth):
        value = {"M": {f"level{depth - level}": value}}
    return value


def _edge_records() -> Iterator[dict[str, Any]]:
    """Changes the platform's common writes do not make, on a moto session table."""
    from moto import mock_aws

    from tests.support.session_stream import MotoSessionTable, as_ttl_removal, metadata_item, tool_record

    with mock_aws():
        tables = MotoSessionTable()
        legacy = ts.session_pk("edge-legacy")
        tables.put(metadata_item("edge-legacy"))
        message = {"M": {"role": {"S": "user"}, "content": {"S": "appended"}}}
        tables.update(
            legacy,
            ts.METADATA_SK,
            "SET context = list_append(context, :m), version = version + :one",
            {":m": {"L": [message, message]}, ":one": {"N": "1"}},
        )
        tables.update(legacy, ts.METADATA_SK, "SET context = :one_item", {":one_item": {"L": [message]}})
        tables.update(
            legacy,
            ts.METADATA_SK,
            "SET attributes = :a, big_value = :big, price_value = :price, huge_value = :huge, note_text = :note",
            {
                ":a": {"M": {"plan": {"M": {"tier": {"S": "gold"}, "seats": {"N": "12"}}}, "tags": {"L": []}}},
                ":big": {"S": "v" * 3000},
                ":price": {"N": "0.25"},
                ":huge": {"N": "123456789012345678901234567890"},
                ":note": {"S": 'café 漢字 "quoted" \\ back'},
            },
        )
        tables.update(
            legacy,
            ts.METADATA_SK,
            "SET raw_bytes = :b, tag_set = :ss, count_set = :ns, nested_deep = :deep",
            {
                ":b": {"B": b"\x00\x01binary\xff"},
                ":ss": {"SS": ["beta", "alpha", "gamma"]},
                ":ns": {"NS": ["3", "1", "2"]},
                ":deep": _nested(31),
            },
        )
        tables.update(legacy, ts.METADATA_SK, "SET big_value = :big2 REMOVE raw_bytes", {":big2": {"S": "w" * 3000}})
        large = ts.session_pk("edge-large")
        tables.put(metadata_item("edge-large", extra={"payload_text": {"S": "p" * 120_000}}))
        tables.update(large, ts.METADATA_SK, "SET version = version + :one", {":one": {"N": "1"}})
        wide = ts.session_pk("edge-wide")
        fields = {f"field{i:02d}": {"S": f"{i:02d}" + "a" * 1900} for i in range(45)}
        tables.put(metadata_item("edge-wide", extra=fields))
        changed = ", ".join(f"field{i:02d} = :f{i:02d}" for i in range(45))
        tables.update(
            wide, ts.METADATA_SK, f"SET {changed}", {f":f{i:02d}": {"S": f"{i:02d}" + "b" * 1900} for i in range(45)}
        )
        tables.put(tool_record("edge-legacy", "2026-11-29T10:06:00.000000Z", "call-1"))
        tables.delete(legacy, ts.tool_record_sk("2026-11-29T10:06:00.000000Z", "call-1"))
        records = tables.drain()
        tables.delete(legacy, ts.METADATA_SK)
        yield from records
        yield from (as_ttl_removal(record) for record in tables.drain())


class _Publisher:
    def publish(self, event: Mapping[str, Any]) -> None:
        pass


def record(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Each record audited by this release's audit function, and its item read back."""
    from moto import mock_aws

    from mcp_platform.adapters.dynamodb.audit_trail import to_record
    from mcp_platform.adapters.dynamodb.audit_writer import AuditWriter
    from mcp_platform.adapters.dynamodb.session_remains import SessionRemains
    from mcp_platform.adapters.dynamodb.stream_images import STREAM_IMAGES, read_stream_change
    from mcp_platform.application.audit.expiry import SessionExpiryHandler
    from mcp_platform.application.audit.processor import AuditProcessor
    from tests.support.session_stream import AUDIT_TABLE, SESSION_TABLE, MotoSessionTable

    cases = []
    with mock_aws():
        tables = MotoSessionTable()
        writer = AuditWriter(tables.client, AUDIT_TABLE)
        expiry = SessionExpiryHandler(SessionRemains(tables.client, SESSION_TABLE), writer, _Publisher())
        processor = AuditProcessor(read_stream_change, STREAM_IMAGES, writer, expiry)
        for stream_record in records:
            change = read_stream_change(stream_record)
            processor.process(stream_record)
            item = None
            if change.session_id is not None:
                sort_key = ts.audit_sk(change.change_time_iso, change.sequence_number)
                key = {ts.AUDIT_PK: {"S": change.pk}, ts.AUDIT_SK: {"S": sort_key}}
                item = tables.client.get_item(TableName=AUDIT_TABLE, Key=key, ConsistentRead=True)["Item"]
            cases.append({"record": stream_record, "item": item, "trail": to_record(item) if item else None})
    return {"cases": cases}


def main(name: str) -> int:
    path = FORMATS_DIR / f"audit_{name}.json.gz"
    if path.exists():
        print(f"{path} exists: a layout is recorded once")
        return 1
    from tests.support.aws import fake_credentials

    with fake_credentials():
        recorded = record([*_bench_records(), *_edge_records()])
    text = json.dumps(recorded, indent=1) + "\n"  # key order kept: a summary hashes the image as delivered
    path.write_bytes(gzip.compress(text.encode(), mtime=0))
    print(f"{path}: {len(recorded['cases'])} records")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
