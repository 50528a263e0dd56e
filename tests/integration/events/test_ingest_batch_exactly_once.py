"""A batch's usage is applied exactly once through the shard's checkpoint, whatever the event
source mapping redelivers: the same batch again, the halves of a bisected batch, the records
after a partial failure. The mapping is simulated here as Lambda documents it: a function error
retries the batch in halves (BisectBatchOnFunctionError) until a single record exhausts its
attempts and is dead-lettered; a batch item failure retries from the failed record.

Each scenario also runs against a naive batch counter (every decodable record of the delivered
batch summed into one write per counter, no checkpoint): it must fail there (``xfail``, strict),
which is what shows the scenario tests the checkpoint and not only the arithmetic.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.ingest_ledger import DynamoIngestLedger
from mcp_platform.application.events.ingest import EventIngestor, PoisonRecordError, ShardRecord, decode_record
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.protocol.clock import ManualClock
from tests.support.tables import session_table_definition

TABLE = "sessions"
SHARD = "events/shardId-000000000000"
T0 = 1_800_000_000.0
ATTEMPTS = 3  # the mapping's retry attempts (stacks/processing.py RETRY_ATTEMPTS)

Handler = Callable[[list[ShardRecord]], str | None]
"""A batch in; None (all done), or the sequence number of the batch item failure; raises on a function error."""


class DiesAfterWrite:
    """The invocation dies (a timeout, the environment killed) right after its ``nth`` usage
    transaction went through: the write is in the table, the mapping sees a function error."""

    def __init__(self, inner: Any, nth: int) -> None:
        self.inner, self.nth, self.done = inner, nth, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def transact_write_items(self, **params: Any) -> Any:
        response = self.inner.transact_write_items(**params)
        self.done += 1
        if self.done == self.nth:
            raise TimeoutError("the invocation ended after its write")
        return response


def event(i: int, principal: str = "alice", **changes: Any) -> ToolCallEvent:
    base = ToolCallEvent(
        event_id=f"call-{i}",
        principal=principal,
        tool="echo",
        status="ok",
        started_at="2026-11-29T10:00:00.000000Z",
        finished_at="2026-11-29T10:00:00.100000Z",
        request_bytes=10,
        response_bytes=20,
        duration_ms=100.0,
    )
    return replace(base, **changes)


def record(seq: int, data: ToolCallEvent | bytes) -> ShardRecord:
    raw = data.to_bytes() if isinstance(data, ToolCallEvent) else data
    return ShardRecord(f"4959{seq:052d}", base64.b64encode(raw).decode())


class Mapping:
    """Lambda's event source mapping for one shard, as far as redelivery goes."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.dead_lettered: list[list[str]] = []

    def deliver(self, batch: list[ShardRecord], attempts: int = ATTEMPTS + 1) -> None:
        while batch:
            try:
                failed = self.handler(batch)
            except Exception:
                attempts -= 1
                if len(batch) == 1 and attempts <= 0:
                    self.dead_lettered.append([r.sequence_number for r in batch])
                    return
                if len(batch) > 1:  # BisectBatchOnFunctionError: each half retried on its own
                    half = len(batch) // 2
                    self.deliver(batch[:half], attempts)
                    self.deliver(batch[half:], attempts)
                    return
                continue
            if failed is None:
                return
            batch = batch[[r.sequence_number for r in batch].index(failed) :]  # retried from the failure


@pytest.fixture
def table(dynamodb: Any) -> str:
    dynamodb.create_table(**session_table_definition(TABLE))  # the table as deployed
    return TABLE


def checkpointed(client: Any) -> Handler:
    """The ingest function's logic (functions/ingest/ingest_handler.py, without the Lambda event)."""
    ledger = DynamoIngestLedger(client, TABLE, sleep=lambda s: None)
    ingestor = EventIngestor(ledger, clock=ManualClock(T0))

    def handle(batch: list[ShardRecord]) -> str | None:
        outcome = ingestor.ingest_batch(SHARD, batch)
        if outcome.failed is not None and outcome.failed == batch[0].sequence_number:
            raise RuntimeError("the batch's first record failed")
        return outcome.failed

    return handle


def naive(client: Any) -> Handler:
    """One write per counter per delivered batch, without the checkpoint."""
    ledger = DynamoIngestLedger(client, TABLE, sleep=lambda s: None)
    ledger.checkpoint = lambda shard: None  # type: ignore[method-assign]
    ledger._checkpoint_update = lambda shard, expected, through: {  # type: ignore[method-assign]
        "Update": {
            "TableName": TABLE,
            "Key": {ts.PK: {"S": "naive"}, ts.SK: {"S": "naive"}},
            "UpdateExpression": "SET #s = :s",
            "ExpressionAttributeNames": {"#s": "seq"},
            "ExpressionAttributeValues": {":s": {"S": through}},
        }
    }

    def handle(batch: list[ShardRecord]) -> str | None:
        good, failed = [], None
        for r in batch:
            try:
                good.append((r.sequence_number, decode_record(r.data_b64)))
            except PoisonRecordError:
                failed = failed or r.sequence_number
        if good:
            ledger.apply_usage(SHARD, good, expected=None, marker_expires_at=int(T0) + 3600)  # type: ignore[arg-type]
        if failed is not None and failed == batch[0].sequence_number:
            raise RuntimeError("the batch's first record failed")
        return failed

    return handle


SCHEMES = [
    pytest.param(checkpointed, id="checkpoint"),
    pytest.param(naive, id="naive", marks=pytest.mark.xfail(strict=True, raises=AssertionError)),
]


def calls(dynamodb: Any, principal: str = "alice") -> int:
    key = {ts.PK: {"S": ts.usage_pk(principal)}, ts.SK: {"S": ts.usage_sk("2026-11-29", "echo")}}
    item = dynamodb.get_item(TableName=TABLE, Key=key, ConsistentRead=True).get("Item", {})
    return int(item.get(ts.USAGE_CALLS, {}).get("N", "0"))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_redelivered_batch_counts_nothing_twice(dynamodb: Any, table: str, scheme: Any) -> None:
    # Given a batch of six calls by two principals, applied
    batch = [record(i, event(i, "alice" if i % 2 else "bob")) for i in range(6)]
    mapping = Mapping(scheme(dynamodb))
    mapping.deliver(batch)
    # When the mapping delivers it again (the invocation's answer was lost), and its tail a third time
    mapping.deliver(batch)
    mapping.deliver(batch[4:])
    # Then each call is counted once, per principal
    assert (calls(dynamodb, "alice"), calls(dynamodb, "bob")) == (3, 3)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_halves_of_a_bisected_batch_count_each_call_once(dynamodb: Any, table: str, scheme: Any) -> None:
    # Given an invocation that dies right after its usage write went through (a timeout)
    batch = [record(i, event(i)) for i in range(8)]
    mapping = Mapping(scheme(DiesAfterWrite(dynamodb, nth=1)))
    # When the mapping bisects the failed batch and retries each half
    mapping.deliver(batch)
    # Then every call is counted exactly once and nothing is dead-lettered
    assert calls(dynamodb) == 8
    assert mapping.dead_lettered == []


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_partial_failure_counts_the_records_around_it_once(dynamodb: Any, table: str, scheme: Any) -> None:
    # Given a batch with a poison record in the middle, and an invocation that dies after the
    # first usage write of the retry from it (the records after the poison one redelivered)
    batch = [record(i, event(i)) for i in range(3)] + [record(3, b"{poison")]
    batch += [record(i, event(i)) for i in range(4, 7)]
    client = DiesAfterWrite(dynamodb, nth=2)
    mapping = Mapping(scheme(client))
    # When the mapping retries from the failure, bisects, and dead-letters the poison record
    mapping.deliver(batch)
    # Then the six calls are counted once each, and only the poison record is dead-lettered
    assert calls(dynamodb) == 6
    assert mapping.dead_lettered == [[batch[3].sequence_number]]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_committed_calls_second_copy_is_not_counted(dynamodb: Any, table: str, scheme: Any) -> None:
    # Given a committed call's event on the stream twice (its instance's flush and the outbox
    # relay's), in two batches, the first of them redelivered
    committed = event(1, recorded=True)
    first = [record(0, event(0)), record(1, committed)]
    mapping = Mapping(scheme(dynamodb))
    mapping.deliver(first)
    mapping.deliver(first)
    mapping.deliver([record(2, committed), record(3, event(3))])
    # Then it is counted once, and its dedupe marker (what the relay checks) exists
    assert calls(dynamodb) == 3
    marker = {ts.PK: {"S": ts.event_dedupe_pk("call-1")}, ts.SK: {"S": ts.EVENT_DEDUPE_SK}}
    assert "Item" in dynamodb.get_item(TableName=TABLE, Key=marker)
