"""Ingest redelivery within DynamoDB's 10-minute ClientRequestToken window (K2 at-least-once, D4).

The ingest transactions carry processing-time values (the dedupe marker's ttl, the session
check's ``:now``), so one token per event would pair the same token with other parameters on a
redelivery, which DynamoDB refuses with IdempotentParameterMismatchException. moto has no token
semantics; the wrapper below adds DynamoDB's documented ones.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from botocore.exceptions import ClientError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.bootstrap.ingest import event_ingestor
from mcp_platform.protocol.clock import ManualClock

TABLE = "sessions"
T0 = 1_800_000_000.0


class DynamoTokenSemantics:
    """Same token + same items within 10 minutes: no effect; same token + other items: refused."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: dict[str, list[dict[str, Any]]] = {}
        self.transactions = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def transact_write_items(self, **params: Any) -> Any:
        self.transactions += 1
        token = params.get("ClientRequestToken")
        if token is not None and token in self.seen:
            if self.seen[token] != params["TransactItems"]:
                error = {"Error": {"Code": "IdempotentParameterMismatchException", "Message": "token reused"}}
                raise ClientError(error, "TransactWriteItems")  # type: ignore[arg-type]
            return {}
        response = self.inner.transact_write_items(**params)
        if token is not None:
            self.seen[token] = copy.deepcopy(params["TransactItems"])
        return response


class ConflictOnce:
    """Cancels the first transaction with TransactionConflict, as a concurrent writer would."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.transactions = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def transact_write_items(self, **params: Any) -> Any:
        self.transactions += 1
        if self.transactions == 1:
            reasons = [{"Code": "TransactionConflict"} for _ in params["TransactItems"]]
            error = {"Error": {"Code": "TransactionCanceledException", "Message": "conflict"}}
            raise ClientError(error | {"CancellationReasons": reasons}, "TransactWriteItems")  # type: ignore[arg-type]
        return self.inner.transact_write_items(**params)


@pytest.fixture
def table(dynamodb: Any) -> str:
    dynamodb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": ts.PK, "KeyType": "HASH"}, {"AttributeName": ts.SK, "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": ts.PK, "AttributeType": "S"},
            {"AttributeName": ts.SK, "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return TABLE


def event(session_id: str | None = None) -> ToolCallEvent:
    return ToolCallEvent(
        event_id="call-1",
        principal="alice",
        tool="echo",
        status="ok",
        started_at="2026-11-29T10:00:00.000000Z",
        finished_at="2026-11-29T10:00:00.120000Z",
        request_bytes=10,
        response_bytes=20,
        duration_ms=120.0,
        session_id=session_id,
    )


def calls_counted(dynamodb: Any) -> int:
    key = {ts.PK: {"S": ts.usage_pk("alice")}, ts.SK: {"S": ts.usage_sk("2026-11-29", "echo")}}
    return int(dynamodb.get_item(TableName=TABLE, Key=key)["Item"][ts.USAGE_CALLS]["N"])


def test_k2_d4_redelivery_seconds_later_is_a_silent_duplicate(dynamodb: Any, table: str) -> None:
    # Given an event ingested through a client with DynamoDB's ClientRequestToken semantics
    clock = ManualClock(T0)
    ingestor = event_ingestor(DynamoTokenSemantics(dynamodb), TABLE, clock=clock, sleep=lambda s: None)
    assert ingestor.ingest(event()).counted is True
    # When Lambda redelivers it 2 s later (a later record of the batch failed)
    clock.advance(2)
    outcome = ingestor.ingest(event())
    # Then the redelivery is a duplicate, not an IdempotentParameterMismatchException
    assert outcome.counted is False
    assert calls_counted(dynamodb) == 1


def test_k2_transaction_conflict_is_retried(dynamodb: Any, table: str) -> None:
    # Given a counting transaction that collides once with a concurrent writer
    client = ConflictOnce(dynamodb)
    sleeps: list[float] = []
    ingestor = event_ingestor(client, TABLE, clock=ManualClock(T0), sleep=sleeps.append)
    # When the event is ingested
    outcome = ingestor.ingest(event())
    # Then it is retried after a backoff and counted exactly once
    assert outcome.counted is True and client.transactions == 2 and len(sleeps) == 1
    assert calls_counted(dynamodb) == 1
