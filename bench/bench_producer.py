"""Producer benchmark: PutRecords packing and CPU per event, against a naive peer.

Both run in this process against a zero-latency fake Kinesis client, so the figures are pure
client-side CPU and call counts (deterministic), not network latency. The peer is the common
naive pattern: one PutRecord call per event.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "platform" / "python"))

from mcp_platform.events.batching import MAX_RECORDS_PER_CALL, partition_key_for
from mcp_platform.events.dead_letters import DeadLetterQueue
from mcp_platform.events.producer import EventProducer
from mcp_platform.events.schema import ToolCallEvent

EVENTS = 20_000
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


def _events(n: int) -> list[ToolCallEvent]:
    return [
        ToolCallEvent(
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
        for i in range(n)
    ]


def _ours(events: list[ToolCallEvent]) -> tuple[float, ZeroLatencyKinesis]:
    client = ZeroLatencyKinesis()
    producer = EventProducer(client, "bench", DeadLetterQueue(UnusedSqs(), "https://sqs.local/q"))
    start = time.process_time()
    for event in events:
        producer.add(event)
    producer.flush()
    return time.process_time() - start, client


def _naive(events: list[ToolCallEvent]) -> tuple[float, ZeroLatencyKinesis]:
    client = ZeroLatencyKinesis()
    start = time.process_time()
    for event in events:
        client.put_record(StreamName="bench", Data=event.to_bytes(), PartitionKey=partition_key_for(event))
    return time.process_time() - start, client


def run() -> list[dict[str, Any]]:
    events = _events(EVENTS)
    ours = min((_ours(events) for _ in range(REPEATS)), key=lambda r: r[0])
    naive = min((_naive(events) for _ in range(REPEATS)), key=lambda r: r[0])
    ours_cpu, ours_client = ours
    naive_cpu, naive_client = naive
    per_call = ours_client.records / ours_client.put_records_calls
    size = len(events[0].to_bytes())
    return [
        {
            "metric": "producer.records_per_put_records_call",
            "value": round(per_call, 1),
            "unit": "records",
            "note": f"{per_call / MAX_RECORDS_PER_CALL:.1%} of the 500 limit; {EVENTS} events of {size} B",
        },
        {
            "metric": "producer.cpu_per_event",
            "value": round(ours_cpu / EVENTS * 1e6, 2),
            "unit": "us",
            "note": "serialize + size check + batch + PutRecords bookkeeping, zero-latency client, min of 5",
        },
        {
            "metric": "naive_put_record.cpu_per_event",
            "value": round(naive_cpu / EVENTS * 1e6, 2),
            "unit": "us",
            "note": "peer: serialize + one PutRecord per event (same fake client)",
        },
        {
            "metric": "producer.api_calls",
            "value": ours_client.put_records_calls,
            "unit": "calls",
            "note": f"for {EVENTS} events",
        },
        {
            "metric": "naive_put_record.api_calls",
            "value": naive_client.put_record_calls,
            "unit": "calls",
            "note": f"for {EVENTS} events",
        },
        {
            "metric": "producer.calls_ratio_vs_naive",
            "value": round(naive_client.put_record_calls / ours_client.put_records_calls, 1),
            "unit": "x",
            "note": "API calls saved by batching (each real call costs a network round trip)",
        },
    ]


if __name__ == "__main__":
    for row in run():
        print(f"{row['metric']:42} {row['value']:>10} {row['unit']:8} {row['note']}")
