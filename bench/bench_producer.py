"""Producer benchmark on the real pattern: one request, its events, one flush.

On Lambda one environment serves one request at a time and the endpoint flushes before each
response's last byte, so batching can only pack the events of *one* request. Two workloads:

* a tool call that emits one event (every tools/call does: its tool-call event): one
  PutRecords of one record, against the naive peer's one PutRecord: the same one round trip;
* a tool that emits many events in a loop (here 50), then one flush: one PutRecords against 50
  PutRecord calls: this is where batching pays (each call is a network round trip on Lambda).

Both run in this process against a zero-latency fake Kinesis client: CPU and call counts
(deterministic), not network latency. The endpoint-level count (a one-event tools/call makes
exactly one Kinesis call) is in the ``aws`` suite.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "platform" / "python"))

from common import row

from mcp_platform.adapters.kinesis.batching import partition_key_for
from mcp_platform.adapters.kinesis.producer import EventProducer
from mcp_platform.adapters.sqs.dead_letters import DeadLetterQueue
from mcp_platform.application.events.schema import ToolCallEvent

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient
    from mypy_boto3_sqs import SQSClient

REQUESTS = int(os.environ.get("BENCH_PRODUCER_REQUESTS", "4000"))
LOOP_EVENTS = 50
REPEATS = 5


class ZeroLatencyKinesis:
    def __init__(self) -> None:
        self.put_records_calls = 0
        self.put_record_calls = 0
        self.records = 0

    def put_records(self, Records: list[dict[str, Any]], **target: Any) -> dict[str, Any]:
        self.put_records_calls += 1
        self.records += len(Records)
        ok = {"SequenceNumber": "1", "ShardId": "shardId-000000000000"}
        return {"FailedRecordCount": 0, "Records": [ok] * len(Records)}

    def put_record(self, **kwargs: Any) -> dict[str, Any]:
        self.put_record_calls += 1
        self.records += 1
        return {"SequenceNumber": "1", "ShardId": "shardId-000000000000"}


class UnusedSqs:
    def send_message_batch(self, **kwargs: Any) -> dict[str, Any]:
        raise AssertionError("no record fails in this benchmark")


def _event(i: int) -> ToolCallEvent:
    return ToolCallEvent(
        event_id=f"01JCALL{i:012d}",
        principal="apikey:team-a",
        tool="search_docs",
        status="ok",
        started_at="2026-11-29T10:00:00.123456Z",
        finished_at="2026-11-29T10:00:00.348000Z",
        request_bytes=512,
        response_bytes=4096,
        duration_ms=224.5,
        session_id=f"sess-{i:08d}",
        emitted_at="2026-11-29T10:00:00.349000Z",
    )


def _ours(requests: list[list[ToolCallEvent]]) -> tuple[float, ZeroLatencyKinesis]:
    client = ZeroLatencyKinesis()
    dead_letters = DeadLetterQueue(cast("SQSClient", UnusedSqs()), "https://sqs.local/q")
    producer = EventProducer(cast("KinesisClient", client), "bench", dead_letters)
    start = time.process_time()
    for events in requests:  # one request: its events, then the flush before its last byte
        for event in events:
            producer.emit(event)
        producer.flush()
    return time.process_time() - start, client


def _naive(requests: list[list[ToolCallEvent]]) -> tuple[float, ZeroLatencyKinesis]:
    client = ZeroLatencyKinesis()
    start = time.process_time()
    for events in requests:
        for event in events:
            client.put_record(StreamName="bench", Data=event.to_bytes(), PartitionKey=partition_key_for(event))
    return time.process_time() - start, client


def _compare(
    per_request: int, requests: int
) -> tuple[tuple[float, ZeroLatencyKinesis], tuple[float, ZeroLatencyKinesis]]:
    work = [[_event(r * per_request + i) for i in range(per_request)] for r in range(requests)]
    ours = min((_ours(work) for _ in range(REPEATS)), key=lambda r: r[0])
    naive = min((_naive(work) for _ in range(REPEATS)), key=lambda r: r[0])
    return ours, naive


def run() -> list[dict[str, Any]]:
    size = len(_event(0).to_bytes())
    rows: list[dict[str, Any]] = []
    for per_request, requests, label in (
        (1, REQUESTS, "one-event tool call"),
        (LOOP_EVENTS, max(1, REQUESTS // LOOP_EVENTS), f"tool emitting {LOOP_EVENTS} events in a loop"),
    ):
        (ours_cpu, ours_client), (naive_cpu, naive_client) = _compare(per_request, requests)
        ours_calls = ours_client.put_records_calls / requests
        naive_calls = naive_client.put_record_calls / requests
        rows += [
            row(
                f"Kinesis calls per request, {label}",
                round(ours_calls, 2),
                round(naive_calls, 2),
                "calls",
                f"ours: add each event, one flush (PutRecords); peer: one PutRecord per event; {size} B events"
                + ("; target: exactly 1" if per_request == 1 else ""),
            ),
            row(
                f"producer CPU per request, {label}",
                round(ours_cpu / requests * 1e6, 1),
                round(naive_cpu / requests * 1e6, 1),
                "us",
                "serialize + size check + PutRecords bookkeeping vs serialize + PutRecord; zero-latency client, "
                f"min of {REPEATS}",
            ),
        ]
    return rows


if __name__ == "__main__":
    for line in run():
        print(line)
