"""Ingest writes a tool-call record only while its session is alive (D6, D7, D4, A4).

A late or replayed event for a session that expired, ended or was already cleaned up (A4
deletes its tool# items) must not recreate a record: such a record has no ttl and no metadata
item, so nothing would ever expire it. Usage is counted all the same.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.sessions import Backoff, ManualClock, SessionStore
from mcp_platform.application.events.ingest import EventIngestor
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.application.sessions.changes import SessionChanges
from mcp_platform.bootstrap.ingest import event_ingestor
from mcp_platform.protocol.clock import iso_utc
from tests.support.tables import create_session_table

TABLE = "sessions"
T0 = 1_800_000_000.0


@pytest.fixture
def table(dynamodb: Any) -> str:
    create_session_table(dynamodb, TABLE)
    return TABLE


def store(dynamodb: Any, now: float = T0) -> SessionStore:
    return SessionStore(
        TABLE, client=dynamodb, clock=ManualClock(now), backoff=Backoff(jitter=False, sleep=lambda s: None)
    )


def event(session_id: str, call_id: str = "call-1") -> ToolCallEvent:
    return ToolCallEvent(
        event_id=call_id,
        principal="alice",
        tool="echo",
        status="ok",
        started_at=iso_utc(T0 + 1),
        finished_at=iso_utc(T0 + 1.1),
        request_bytes=10,
        response_bytes=20,
        duration_ms=100.0,
        session_id=session_id,
    )


def tool_records(dynamodb: Any, session_id: str) -> list[dict[str, Any]]:
    return dynamodb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :p)",
        ExpressionAttributeValues={":pk": {"S": ts.session_pk(session_id)}, ":p": {"S": ts.TOOL_RECORD_PREFIX}},
        ConsistentRead=True,
    )["Items"]


def calls_counted(dynamodb: Any) -> int:
    key = {ts.PK: {"S": ts.usage_pk("alice")}, ts.SK: {"S": ts.usage_sk(iso_utc(T0)[:10], "echo")}}
    item = dynamodb.get_item(TableName=TABLE, Key=key, ConsistentRead=True).get("Item", {})
    return int(item.get(ts.USAGE_CALLS, {"N": "0"})["N"])


def ingestor(dynamodb: Any, now: float) -> EventIngestor:
    return event_ingestor(dynamodb, TABLE, clock=ManualClock(now), sleep=lambda s: None)


def test_d7_a4_event_for_a_cleaned_up_session_writes_no_record_but_counts_usage(dynamodb: Any, table: str) -> None:
    # Given a session whose metadata was TTL-deleted and whose records the A4 cleanup removed
    # When its event is (re)delivered late
    outcome = ingestor(dynamodb, T0 + 7200).ingest(event("gone"))
    # Then no orphan record appears, and the call is still counted once
    assert tool_records(dynamodb, "gone") == []
    assert (outcome.record_written, outcome.session_gone, outcome.counted) == (False, True, True)
    assert calls_counted(dynamodb) == 1


def test_d6_event_for_an_expired_session_not_yet_deleted_writes_no_record(dynamodb: Any, table: str) -> None:
    # Given a session whose ttl has passed but which DynamoDB has not deleted yet (D6)
    session = store(dynamodb).create_session("alice")
    # When its event arrives after the ttl
    outcome = ingestor(dynamodb, session.ttl + 1).ingest(event(session.id))
    # Then the expired session gets no record
    assert tool_records(dynamodb, session.id) == []
    assert outcome.session_gone is True and outcome.counted is True


def test_d7_event_for_an_ended_session_writes_no_record(dynamodb: Any, table: str) -> None:
    # Given a session that was ended explicitly
    sessions = store(dynamodb)
    session = sessions.create_session("alice")
    sessions.end_session(session.id)
    # When its event arrives
    outcome = ingestor(dynamodb, T0 + 2).ingest(event(session.id))
    # Then no record is written for it
    assert tool_records(dynamodb, session.id) == []
    assert outcome.session_gone is True


def test_d4_live_session_gets_its_record_once_and_a_redelivery_is_a_silent_duplicate(dynamodb: Any, table: str) -> None:
    # Given a live session and an ingested event
    session = store(dynamodb).create_session("alice")
    first = ingestor(dynamodb, T0 + 2).ingest(event(session.id))
    before = tool_records(dynamodb, session.id)
    # When the same event is delivered again
    again = ingestor(dynamodb, T0 + 3).ingest(event(session.id))
    # Then one record, untouched by the redelivery, and usage counted once
    assert (first.record_written, first.session_gone, first.counted) == (True, False, True)
    assert (again.record_written, again.session_gone, again.counted) == (False, False, False)
    assert len(before) == 1 and tool_records(dynamodb, session.id) == before
    assert calls_counted(dynamodb) == 1


def test_d4_a_committed_call_gets_no_second_record_whatever_its_event_says(dynamodb: Any, table: str) -> None:
    """Given call X committed by the endpoint (record + toolcall# marker), when an event for X
    arrives carrying another started_at (a different record key), then ingest writes no second
    record: the marker says X is recorded (one record per tool call id)."""
    from mcp_platform.adapters.dynamodb.sessions import ToolCall

    sessions = store(dynamodb)
    session = sessions.create_session("alice")
    sessions.commit(
        session, ToolCall("X", "echo", {}, {"r": 1}, started_at=T0 + 1, finished_at=T0 + 1.1), SessionChanges()
    )
    late = ToolCallEvent(
        event_id="X",
        principal="alice",
        tool="echo",
        status="ok",
        started_at=iso_utc(T0 + 1.5),
        finished_at=iso_utc(T0 + 1.6),
        request_bytes=1,
        response_bytes=1,
        duration_ms=100.0,
        session_id=session.id,
    )
    outcome = event_ingestor(dynamodb, TABLE, clock=ManualClock(T0 + 5)).ingest(late)
    assert [r[ts.TOOL_CALL_ID]["S"] for r in tool_records(dynamodb, session.id)] == ["X"]
    assert outcome.counted  # usage still counted once
