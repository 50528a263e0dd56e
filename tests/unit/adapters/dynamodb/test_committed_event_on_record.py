"""K10's committed event on a call's record, stored without what the record already holds
(issue #41): the relay gets back the event the commit was given, field for field."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import item_size
from mcp_platform.adapters.dynamodb.sessions import ManualClock, SessionStore, ToolCall
from mcp_platform.adapters.dynamodb.sessions.items import committed_event_of
from mcp_platform.application.events.schema import STATUS_ERROR, STATUS_OK, ToolCallEvent
from mcp_platform.application.sessions.changes import SessionChanges
from mcp_platform.protocol.clock import iso_utc

STARTED = 1_800_000_000.25
FINISHED = 1_800_000_000.375
TRACE = {"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7"}


def the_commits_event(**overrides: Any) -> ToolCallEvent:
    """The event as the endpoint builds it for a committed call (``invocation.call_event``); its
    session is the one :func:`committed_record` opens."""
    fields: dict[str, Any] = {
        "event_id": "call-1",
        "principal": "alice",
        "tool": "append_note",
        "status": STATUS_OK,
        "started_at": iso_utc(STARTED),
        "finished_at": iso_utc(FINISHED),
        "emitted_at": iso_utc(FINISHED),
        "request_bytes": 78,
        "response_bytes": 106,
        "duration_ms": 125.0,
        "recorded": True,
        **TRACE,
    }
    fields.update(overrides)
    return ToolCallEvent(**fields)


def committed_record(ddb: Any, table: str, clock: ManualClock, event: ToolCallEvent | None, **store: Any) -> Any:
    """Commits call-1 with ``event`` in a new session (the event's session) and returns its
    record item as the table holds it."""
    sessions = SessionStore(table, client=ddb, clock=clock, **store)
    session = sessions.create_session("alice")
    if event is not None:
        event.session_id = session.id
    trace = {} if event is None or event.trace_id is None else TRACE
    call = ToolCall(
        "call-1",
        "append_note",
        {"text": "hi"},
        {"content": [], "isError": event is not None and event.status == STATUS_ERROR},
        is_error=event is not None and event.status == STATUS_ERROR,
        started_at=STARTED,
        finished_at=FINISHED,
        event=event,
        replayable=False,
        **trace,
    )
    sessions.commit(session, call, SessionChanges())
    items = ddb.query(
        TableName=table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :tool)",
        ExpressionAttributeValues={":pk": {"S": ts.session_pk(session.id)}, ":tool": {"S": "tool#"}},
    )["Items"]
    assert len(items) == 1
    return items[0]


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"status": STATUS_ERROR},
        {"principal": "tenant:acme/alice", "tenant": "acme"},
        {"trace_id": None, "span_id": None},
    ],
    ids=["ok", "error", "tenant caller", "untraced"],
)
def test_k10_a_record_stores_only_what_it_does_not_hold_and_gives_the_event_back(
    ddb: Any, table: str, clock: ManualClock, overrides: dict[str, Any]
) -> None:
    # Given the event of a committed call, as the endpoint builds it
    event = the_commits_event(**overrides)
    # When the call is committed
    record = committed_record(ddb, table, clock, event)
    # Then its record keeps, of the event, only what the record does not already say
    kept = set(record[ts.COMMITTED_EVENT]["M"])
    assert kept == {"principal", "request_bytes", "response_bytes", "duration_ms", "v"} | (
        {"tenant"} if event.tenant else set()
    )
    # And the record's image gives the event back, field for field
    stored = committed_event_of(record)
    assert stored is not None and ToolCallEvent.from_bytes(stored) == event


def test_k10_a_field_that_differs_from_the_records_is_kept_on_it(ddb: Any, table: str, clock: ManualClock) -> None:
    # Given an event emitted later than its call finished (not what the endpoint builds)
    event = the_commits_event(emitted_at=iso_utc(FINISHED + 1))
    record = committed_record(ddb, table, clock, event)
    # Then that field is kept, and the event comes back exactly
    assert "emitted_at" in record[ts.COMMITTED_EVENT]["M"]
    stored = committed_event_of(record)
    assert stored is not None and ToolCallEvent.from_bytes(stored) == event


def test_k10_an_event_the_record_would_add_to_is_kept_whole(ddb: Any, table: str, clock: ManualClock) -> None:
    # Given an event without the "recorded" flag, which every rebuilt event would carry
    event = the_commits_event(recorded=None)
    record = committed_record(ddb, table, clock, event)
    # Then it is stored whole, as its wire JSON, and read back unchanged
    assert record[ts.COMMITTED_EVENT] == {"S": event.to_bytes().decode()}
    assert committed_event_of(record) == event.to_bytes()


def test_k10_a_deployment_beside_an_earlier_release_stores_the_event_whole(
    ddb: Any, table: str, clock: ManualClock
) -> None:
    # Given a deployment that release 0.3 may still serve beside (compatible_with=0.3: the
    # store's event_as_text, test_session_store_clients)
    event = the_commits_event()
    # When a call is committed
    whole = committed_record(ddb, table, clock, event, event_as_text=True)
    # Then its record holds the whole wire JSON, which release 0.3's relay reads
    assert whole[ts.COMMITTED_EVENT] == {"S": event.to_bytes().decode()}
    assert committed_event_of(whole) == event.to_bytes()


def test_k10_the_record_without_the_events_second_spelling_is_smaller(ddb: Any, table: str, clock: ManualClock) -> None:
    # Given the same call committed with its event whole and with what the record lacks
    whole = committed_record(ddb, table, clock, the_commits_event(), event_as_text=True)
    lean = committed_record(ddb, table, clock, the_commits_event())
    # Then the lean record is smaller by most of the event (what its audit INSERT stores too)
    assert item_size(whole) - item_size(lean) > 250


def test_k10_a_record_without_a_committed_event_has_none(ddb: Any, table: str, clock: ManualClock) -> None:
    record = committed_record(ddb, table, clock, None)
    assert ts.COMMITTED_EVENT not in record
    assert committed_event_of(record) is None
