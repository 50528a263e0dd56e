"""One trace's journey through the local platform, read from the endpoint log files and the
emulator (the stages `python -m local.trace` prints, in the order a call travels)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from local.endpoint_log import call_summary, log_files
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.audit_trail import to_record
from mcp_platform.application.metrics import OPERATION_DURATION
from mcp_platform.protocol.trace_context import SPAN_ID, TRACE_ID

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_kinesis import KinesisClient
    from mypy_boto3_kinesis.type_defs import RecordTypeDef

MAX_STREAM_PAGES = 1000  # per shard: bounds a read of a stream that keeps growing while it is read


@dataclass(frozen=True)
class Step:
    """One thing the trace left somewhere: its stage, when (sortable text), and what it says."""

    stage: str
    when: str
    text: str


def _iso(epoch_ms: object) -> str:
    if not isinstance(epoch_ms, int | float):
        return "?"
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def endpoint_lines(trace_id: str, folder: Path) -> list[Step]:
    """The endpoint log lines naming the trace (EMF lines by their request, log lines by their message)."""
    steps = []
    for path in log_files(folder):
        with path.open(encoding="utf-8", errors="replace") as lines:
            for text in lines:
                if trace_id not in text:
                    continue  # most lines: no JSON parse
                try:
                    line = json.loads(text)
                except json.JSONDecodeError:
                    continue
                if not isinstance(line, dict) or line.get(TRACE_ID) != trace_id:
                    continue
                span = f"span {line.get(SPAN_ID, '-')}"
                if "_aws" in line:
                    when = _iso(line["_aws"].get("Timestamp"))
                    metrics = ", ".join(m["Name"] for m in line["_aws"]["CloudWatchMetrics"][0]["Metrics"])
                    said = call_summary(line) if OPERATION_DURATION in line else f"metric {metrics}"
                    steps.append(Step("endpoint", when, f"EMF   {said}  {span}"))
                else:
                    when = _iso(line.get("timestamp"))
                    said = f"{line.get('level', '?')} {line.get('logger', '?')}: {line.get('message', '')}"
                    steps.append(Step("endpoint", when, f"log   {said}  {span}"))
    return sorted(steps, key=lambda step: step.when)


def stream_events(kinesis: KinesisClient, stream: str, trace_id: str) -> list[Step]:
    """The records of the event stream whose event names the trace, from every shard's start."""
    steps = []
    for shard in _shards(kinesis, stream):
        for record in _shard_records(kinesis, stream, shard):
            try:
                event = json.loads(record["Data"])
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue  # a poison record names no trace
            if not isinstance(event, dict) or event.get(TRACE_ID) != trace_id:
                continue
            said = (
                f"{event.get('type', 'tool.call')} {event.get('tool', '?')} {event.get('status', '?')}"
                f"  event {event.get('event_id')}  session {event.get('session_id', '-')}"
                f"  span {event.get(SPAN_ID, '-')}  ({shard} #{record['SequenceNumber']})"
            )
            steps.append(Step("kinesis", str(event.get("emitted_at", "?")), said))
    return sorted(steps, key=lambda step: step.when)


def _shards(kinesis: KinesisClient, stream: str) -> Iterator[str]:
    params: dict[str, Any] = {"StreamName": stream}
    while True:
        page = kinesis.list_shards(**params)
        yield from (shard["ShardId"] for shard in page["Shards"])
        if not page.get("NextToken"):
            return
        params = {"NextToken": page["NextToken"]}


def _shard_records(kinesis: KinesisClient, stream: str, shard: str) -> Iterator[RecordTypeDef]:
    iterator = kinesis.get_shard_iterator(StreamName=stream, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    position = iterator["ShardIterator"]
    for _ in range(MAX_STREAM_PAGES):
        page = kinesis.get_records(ShardIterator=position, Limit=1000)
        yield from page["Records"]
        position = page.get("NextShardIterator")
        if not page["Records"] or position is None:
            return  # caught up with the shard (or it was closed)


def _scan(dynamodb: DynamoDBClient, table: str, trace_id: str) -> Iterator[dict[str, Any]]:
    params: dict[str, Any] = {
        "TableName": table,
        "FilterExpression": "#trace = :trace",
        "ExpressionAttributeNames": {"#trace": TRACE_ID},
        "ExpressionAttributeValues": {":trace": {"S": trace_id}},
        "ConsistentRead": True,
    }
    while True:
        page = dynamodb.scan(**params)
        yield from page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _text(item: dict[str, Any], name: str) -> str:
    value = item.get(name, {})
    return str(value.get("S", value.get("N", "-"))) if isinstance(value, dict) else "-"


def table_items(dynamodb: DynamoDBClient, table: str, trace_id: str) -> list[Step]:
    """The session-table items naming the trace, each named by what it is."""
    steps = []
    for item in _scan(dynamodb, table, trace_id):
        pk, sk = item[ts.PK]["S"], item[ts.SK]["S"]
        if sk.startswith(ts.TOOL_RECORD_PREFIX):
            # A commit's record holds its result or names the marker that does; ingest's, neither.
            writer = "the endpoint's commit" if ts.RESULT_SK in item or ts.RESULT in item else "ingest"
            kind, when = f"tool-call record (written by {writer})", _text(item, ts.STARTED_AT)
        elif sk.startswith(ts.TOOL_CALL_MARKER_PREFIX):
            kind, when = "idempotency marker", _text(item, ts.COMMITTED_AT)
        elif pk.startswith(ts.EVENT_DEDUPE_PREFIX):
            kind, when = "ingest dedupe marker (the event was counted)", ""
        elif sk == ts.METADATA_SK:
            kind, when = "session metadata (its last commit)", _text(item, ts.UPDATED_AT)
        elif pk.startswith(ts.TASK_PREFIX):
            kind, when = f"task ({_text(item, 'task_status')})", ""
        else:
            kind, when = "item", ""
        steps.append(Step("ingest", when, f"{kind}  {pk} / {sk}  span {_text(item, ts.SPAN_ID)}"))
    return sorted(steps, key=lambda step: (step.when == "", step.when))


def audit_records(dynamodb: DynamoDBClient, table: str, trace_id: str) -> list[Step]:
    """The audit records of the changes the trace made."""
    steps = []
    for item in _scan(dynamodb, table, trace_id):
        record = to_record(item)  # an item stores only what its key and images do not give back
        said = (
            f"{record['event_name']} {_text(item, ts.AUDIT_PK)} / {record['item']}"
            f"  seq {record['sequence_number']}  span {_text(item, ts.SPAN_ID)}"
        )
        steps.append(Step("audit", record["change_time"], said))
    return sorted(steps, key=lambda step: step.when)


def render(trace_id: str, sections: list[tuple[str, list[Step]]]) -> str:
    lines = [f"trace {trace_id}"]
    for title, steps in sections:
        lines += ["", title]
        lines += [f"  {step.when:<27} {step.text}" if step.when else f"  {'':<27} {step.text}" for step in steps]
        if not steps:
            lines.append("  (nothing yet)")
    return "\n".join(lines)
