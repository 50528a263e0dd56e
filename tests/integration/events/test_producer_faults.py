"""K1/K2 under injected PutRecords partial failures on moto (whose FailedRecordCount is always 0).

Fault injection uses botocore event hooks on the real client:
- ``before-parameter-build``: draw a fate per entry (30 % ProvisionedThroughputExceeded, 1 %
  InternalFailure) and strip the failing entries from the request, so they never reach the
  stream, exactly like a real partial failure;
- ``before-call``: if every entry failed, short-circuit the call (nothing to send);
- ``after-call``: rebuild the response in the original order with ErrorCode entries and the
  real FailedRecordCount.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from types import SimpleNamespace

import pytest

from mcp_platform.adapters.kinesis.batching import partition_key_for
from mcp_platform.adapters.kinesis.producer import EventProducer
from mcp_platform.adapters.sqs.dead_letters import DeadLetterQueue
from mcp_platform.application.events.schema import ToolCallEvent
from tests.support.kinesis import drain_queue, make_stream, read_whole_stream

PTEE = "ProvisionedThroughputExceededException"
EVENTS = 10_000


class PutRecordsFaults:
    def __init__(self, client, seed: int = 7, throttle: float = 0.30, internal: float = 0.01) -> None:
        self.rng = random.Random(seed)
        self.throttle, self.internal = throttle, internal
        self.last_code: dict[str, str | None] = {}  # event id -> code of its latest attempt
        self.injected = 0
        events = client.meta.events
        events.register("before-parameter-build.kinesis.PutRecords", self.before_build)
        events.register("before-call.kinesis.PutRecords", self.before_call)
        events.register("after-call.kinesis.PutRecords", self.after_call)

    def _fate(self) -> str | None:
        roll = self.rng.random()
        return PTEE if roll < self.throttle else "InternalFailure" if roll < self.throttle + self.internal else None

    def before_build(self, params, context, **kwargs):
        fates = []
        for record in params["Records"]:
            fate = self._fate()
            self.last_code[json.loads(record["Data"])["event_id"]] = fate
            fates.append(fate)
        self.injected += sum(1 for f in fates if f)
        context["fault_fates"] = fates
        if any(f is None for f in fates):  # keep at least one entry: the request must stay valid
            params["Records"] = [r for r, f in zip(params["Records"], fates, strict=True) if f is None]

    def before_call(self, context, **kwargs):
        fates = context.get("fault_fates", [])
        if fates and all(fates):
            return SimpleNamespace(status_code=200, headers={}), {"FailedRecordCount": 0, "Records": []}
        return None

    def after_call(self, parsed, context, **kwargs):
        fates = context.get("fault_fates")
        if fates is None:
            return
        delivered = iter(parsed.get("Records", []))
        parsed["Records"] = [
            {"ErrorCode": f, "ErrorMessage": f"{f} (injected)"} if f else next(delivered) for f in fates
        ]
        parsed["FailedRecordCount"] = sum(1 for f in fates if f)


class NaiveProducer:
    """Control: batches correctly but trusts the HTTP 200 and ignores FailedRecordCount."""

    def __init__(self, kinesis, stream: str) -> None:
        self.kinesis, self.stream, self.buffer = kinesis, stream, []

    def emit(self, event: ToolCallEvent) -> None:
        self.buffer.append({"Data": event.to_bytes(), "PartitionKey": partition_key_for(event)})

    def flush(self) -> None:
        for i in range(0, len(self.buffer), 500):
            self.kinesis.put_records(StreamName=self.stream, Records=self.buffer[i : i + 500])
        self.buffer = []


def make_events(n: int) -> list[ToolCallEvent]:
    return [
        ToolCallEvent(
            event_id=f"call-{i:05d}",
            principal="p",
            tool="echo",
            status="ok",
            started_at="2026-11-29T10:00:00.000000Z",
            finished_at="2026-11-29T10:00:00.010000Z",
            request_bytes=10,
            response_bytes=20,
            duration_ms=10,
            session_id=f"sess-{i % 997}",
        )
        for i in range(n)
    ]


def delivery_problems(expected: set[str], stream_records, dlq_messages, faults: PutRecordsFaults) -> list[str]:
    """Every event in the stream exactly once, or in the DLQ with its code; nothing else."""
    problems = []
    stream_ids = [json.loads(r["Data"])["event_id"] for r in stream_records]
    dlq_ids = {}
    for message in dlq_messages:
        event_id = json.loads(message["Body"])["event_id"]
        if event_id in dlq_ids:
            problems.append(f"{event_id} dead-lettered twice")
        dlq_ids[event_id] = message["MessageAttributes"]["ErrorCode"]["StringValue"]
    duplicates = {i for i, n in Counter(stream_ids).items() if n > 1}
    problems += [f"{i} in the stream more than once" for i in sorted(duplicates)]
    problems += [f"{i} both in the stream and the DLQ" for i in sorted(set(stream_ids) & dlq_ids.keys())]
    missing = expected - set(stream_ids) - dlq_ids.keys()
    problems += [f"{len(missing)} events lost (e.g. {sorted(missing)[:3]})"] if missing else []
    unknown = (set(stream_ids) | dlq_ids.keys()) - expected
    problems += [f"unknown events {sorted(unknown)[:3]}"] if unknown else []
    problems += [
        f"{i} dead-lettered as {code}, last failure was {faults.last_code.get(i)}"
        for i, code in dlq_ids.items()
        if code != faults.last_code.get(i)
    ]
    return problems


@pytest.mark.slow  # ≈10 s: moto's SQS rescans the queue on every receive
def test_k1_k2_injected_partial_failures_lose_nothing(kinesis, sqs):
    # Given a 2-shard stream, a DLQ, and 30 % throttling + 1 % internal failures on every call
    stream = make_stream(kinesis, "tool-events", 2)
    url = sqs.create_queue(QueueName="producer-dlq")["QueueUrl"]
    faults = PutRecordsFaults(kinesis)
    sleeps: list[float] = []
    dlq = DeadLetterQueue(sqs, url, stream_name=stream, sleep=sleeps.append)
    producer = EventProducer(kinesis, stream, dlq, sleep=sleeps.append)
    events = make_events(EVENTS)
    for event in events:
        producer.emit(event)
    # When flushed
    result = producer.flush()
    # Then every event is in the stream exactly once or in the DLQ with its last error code
    problems = delivery_problems(
        {e.event_id for e in events}, read_whole_stream(kinesis, stream), drain_queue(sqs, url), faults
    )
    assert problems == []
    # And both paths were exercised: retries recovered most, some were exhausted (≈ 0.31^3)
    assert faults.injected > 3000
    assert 100 < result.dead_lettered < 600
    assert result.sent + result.dead_lettered == EVENTS
    assert set(result.error_codes) <= {PTEE, "InternalFailure"}
    assert all(s <= 0.2 for s in sleeps)  # two resends: 100 ms and 200 ms caps


def test_k2_control_naive_producer_fails_the_same_check(kinesis, sqs):
    # Given the same faults and a producer that ignores FailedRecordCount
    stream = make_stream(kinesis, "tool-events", 2)
    url = sqs.create_queue(QueueName="producer-dlq")["QueueUrl"]
    faults = PutRecordsFaults(kinesis)
    naive = NaiveProducer(kinesis, stream)
    events = make_events(EVENTS)
    for event in events:
        naive.emit(event)
    # When flushed
    naive.flush()
    # Then the check catches the loss: about 31 % of the events are neither in the stream nor the DLQ
    stream_records = read_whole_stream(kinesis, stream)
    problems = delivery_problems({e.event_id for e in events}, stream_records, drain_queue(sqs, url), faults)
    assert any("events lost" in p for p in problems)
    assert EVENTS - len(stream_records) > 2500
