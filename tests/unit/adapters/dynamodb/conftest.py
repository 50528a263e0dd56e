"""Fixtures for the session store tests: a moto-backed table per test, a manual clock, a
backoff that records its waits instead of sleeping, and a wrapper client that records every
call and can inject faults."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from mcp_platform.adapters.dynamodb.sessions import Backoff, ManualClock, SessionStore
from tests.support.tables import create_session_table


@pytest.fixture
def ddb(aws_env: None) -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("dynamodb", region_name="us-east-1")


@pytest.fixture
def table(ddb: Any) -> str:
    name = f"sessions-{uuid.uuid4().hex[:8]}"
    create_session_table(ddb, name)
    return name


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_800_000_000.0)


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def backoff(sleeps: list[float]) -> Backoff:
    return Backoff(jitter=False, sleep=sleeps.append)


class RecordingClient:
    """Stands in for a DynamoDB/DAX client: records (operation, params), runs an optional
    ``before`` hook per operation (to inject errors or race another writer), delegates."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.before: dict[str, Callable[[dict[str, Any]], None]] = {}
        self.meta = inner.meta

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)

        def call(**params: Any) -> Any:
            self.calls.append((name, params))
            hook = self.before.get(name)
            if hook is not None:
                hook(params)
            return target(**params)

        return call

    def ops(self) -> list[str]:
        return [name for name, _ in self.calls]


@pytest.fixture
def recording(ddb: Any) -> RecordingClient:
    return RecordingClient(ddb)


@pytest.fixture
def store(ddb: Any, table: str, clock: ManualClock, backoff: Backoff) -> SessionStore:
    return SessionStore(table, client=ddb, clock=clock, backoff=backoff, ttl_seconds=600)


@pytest.fixture
def recorded_store(recording: RecordingClient, table: str, clock: ManualClock, backoff: Backoff) -> SessionStore:
    return SessionStore(table, client=recording, clock=clock, backoff=backoff, ttl_seconds=600)


class TablePeek:
    """Reads the table behind the store's back (consistent), to check what was written."""

    def __init__(self, ddb: Any, table: str) -> None:
        self.ddb, self.table = ddb, table

    def item(self, pk: str, sk: str) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self.ddb.get_item(
            TableName=self.table, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
        ).get("Item")
        return item

    def items(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.ddb.scan(TableName=self.table, ConsistentRead=True)["Items"]
        return items

    def sks(self) -> list[str]:
        return sorted(item["sk"]["S"] for item in self.items())


@pytest.fixture
def peek(ddb: Any, table: str) -> TablePeek:
    return TablePeek(ddb, table)
