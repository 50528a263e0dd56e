"""CPU cost of auditing one stream record (diff + audit item preparation), against peers.

The audited path is the processor's per-record work with a zero-latency fake DynamoDB client:
parse the Lambda-shaped record, diff the images, build the bounded audit item, "put" it. Peers,
measured in the same run on the same records: a naive audit that copies both full images as
JSON (no diff, no bounds), and Powertools' DynamoDBRecord parsing alone (deserialising both
images, which any handler reading the record as Python pays), and the two together (the usual
naive audit: parse, then store both plain images as JSON). Two record shapes: a typical
version bump + one-message append on a 20-message context, and a 200-message (~60 KB) context.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from mcp_platform.audit.diff import diff_images
from mcp_platform.audit.records import StreamChange
from mcp_platform.audit.writer import AuditWriter

RECORDS = 500
REPEATS = 5


class ZeroLatencyClient:
    """Accepts every put instantly, so only our CPU is measured."""

    def put_item(self, **_: Any) -> dict[str, Any]:
        return {}


def _message(i: int) -> dict[str, Any]:
    text = f"message {i}: " + "lorem ipsum dolor sit amet " * 10
    return {"M": {"role": {"S": "user" if i % 2 else "assistant"}, "content": {"S": text}}}


def _record(seq: int, context_len: int) -> dict[str, Any]:
    base = {
        "pk": {"S": f"session#{seq:08d}"},
        "sk": {"S": "metadata"},
        "status": {"S": "active"},
        "owner": {"S": "principal-1"},
        "kind": {"S": "application"},
        "ttl": {"N": "1795960000"},
        "created_at": {"S": "2026-11-29T10:00:00Z"},
    }
    old = {**base, "version": {"N": "7"}, "context": {"L": [_message(i) for i in range(context_len)]}}
    new = {**base, "version": {"N": "8"}, "context": {"L": [_message(i) for i in range(context_len + 1)]}}
    return {
        "eventID": f"e{seq}",
        "eventName": "MODIFY",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": 1795956130,
            "Keys": {"pk": base["pk"], "sk": base["sk"]},
            "OldImage": old,
            "NewImage": new,
            "SequenceNumber": str(10**21 + seq),
            "SizeBytes": 1000,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/sessions/stream/x",
    }


def _cpu_us_per_record(work: Callable[[dict[str, Any]], object], records: list[dict[str, Any]]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.process_time_ns()
        for record in records:
            work(record)
        best = min(best, (time.process_time_ns() - start) / 1000 / len(records))
    return best


def _audit(writer: AuditWriter) -> Callable[[dict[str, Any]], object]:
    def work(record: dict[str, Any]) -> object:
        change = StreamChange.from_record(record)
        return writer.put(writer.build_item(change, diff_images(change.old_image, change.new_image)))

    return work


def _naive_copy(record: dict[str, Any]) -> object:
    ddb = record["dynamodb"]
    return {"old": json.dumps(ddb["OldImage"]), "new": json.dumps(ddb["NewImage"]), "seq": ddb["SequenceNumber"]}


def _naive_plain_audit(record: dict[str, Any]) -> object:
    stream = DynamoDBRecord(record).dynamodb
    assert stream is not None
    return {"old": json.dumps(stream.old_image, default=str), "new": json.dumps(stream.new_image, default=str)}


def _powertools_parse(record: dict[str, Any]) -> object:
    stream = DynamoDBRecord(record).dynamodb
    assert stream is not None
    return stream.old_image, stream.new_image


def run() -> list[dict[str, Any]]:
    writer = AuditWriter(ZeroLatencyClient(), "audit")
    rows: list[dict[str, Any]] = []
    for label, context_len in (("ctx20", 20), ("ctx200", 200)):
        records = [_record(i, context_len) for i in range(RECORDS if context_len < 100 else RECORDS // 10)]
        image_bytes = len(json.dumps(records[0]["dynamodb"]["NewImage"]))
        ours = _cpu_us_per_record(_audit(writer), records)
        naive = _cpu_us_per_record(_naive_copy, records)
        parse = _cpu_us_per_record(_powertools_parse, records)
        plain = _cpu_us_per_record(_naive_plain_audit, records)
        note = f"MODIFY: version bump + 1 appended message, context {context_len} msgs, image {image_bytes} B"
        rows += [
            {"metric": f"audit_record_cpu_{label}", "value": round(ours, 1), "unit": "us/record", "note": note},
            {
                "metric": f"peer_naive_image_copy_cpu_{label}",
                "value": round(naive, 1),
                "unit": "us/record",
                "note": "json.dumps of both full images, no diff, no bounds",
            },
            {
                "metric": f"peer_powertools_parse_cpu_{label}",
                "value": round(parse, 1),
                "unit": "us/record",
                "note": "DynamoDBRecord old_image + new_image deserialisation only",
            },
            {
                "metric": f"peer_naive_plain_audit_cpu_{label}",
                "value": round(plain, 1),
                "unit": "us/record",
                "note": "Powertools parse + json.dumps of both plain images (the usual naive audit)",
            },
            {
                "metric": f"audit_vs_naive_plain_audit_{label}",
                "value": round(ours / plain, 2),
                "unit": "ratio",
                "note": "audit record (diff + item) / naive plain-image audit; < 1 is cheaper",
            },
            {
                "metric": f"audit_vs_powertools_parse_{label}",
                "value": round(ours / parse, 2),
                "unit": "ratio",
                "note": "audit record (diff + item) / Powertools parse alone; < 1 is cheaper",
            },
            {
                "metric": f"audit_vs_naive_copy_{label}",
                "value": round(ours / naive, 2),
                "unit": "ratio",
                "note": "audit record (diff + item) / naive full-image JSON copy",
            },
        ]
    return rows


if __name__ == "__main__":
    for row in run():
        print(f"{row['metric']:40} {row['value']:>10} {row['unit']:10} {row['note']}")
