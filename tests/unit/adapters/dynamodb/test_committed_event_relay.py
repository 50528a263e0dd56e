"""K10's outbox on the session table: a commit stores the call's event on its record, the table
stream carries it on the record's INSERT only, and the relay emits it unless ingest counted it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_platform.adapters.dynamodb.ingest_ledger import CountedEventMarkers, DynamoIngestLedger
from mcp_platform.adapters.dynamodb.sessions import ManualClock, SessionStore, ToolCall
from mcp_platform.adapters.dynamodb.stream_images import read_stream_change
from mcp_platform.application.audit.records import StreamChange
from mcp_platform.application.events.relay import CommittedEventRelay
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.application.sessions.changes import SessionChanges
from tests.support.session_stream import SESSION_TABLE, MotoSessionTable

NOW = 1_800_000_000.0


class Published:
    def __init__(self) -> None:
        self.events: list[Mapping[str, Any]] = []

    def publish(self, event: Mapping[str, Any]) -> None:
        self.events.append(event)


def committed_changes(tables: MotoSessionTable, make_event: Any) -> tuple[ToolCallEvent, list[StreamChange]]:
    store = SessionStore(SESSION_TABLE, client=tables.client, clock=ManualClock(NOW))
    session = store.create_session("alice")
    event = make_event(event_id="call-1", session_id=session.id, principal="alice", tool="append_note")
    tables.drain()
    call = ToolCall("call-1", "append_note", {"text": "hi"}, {"content": []}, event=event)
    store.commit(session, call, SessionChanges())
    return event, [read_stream_change(record) for record in tables.drain()]


def test_k10_the_record_insert_carries_the_committed_event_and_nothing_else_does(
    tables: MotoSessionTable, make_event: Any
) -> None:
    # When a call is committed with its event
    event, changes = committed_changes(tables, make_event)
    # Then the stream's INSERT of its record carries the event, field for field; the marker and
    # the metadata update carry none
    carried = {change.sk.split("#")[0]: change.committed_event for change in changes}
    assert carried.keys() == {"tool", "toolcall", "metadata"}
    assert carried["toolcall"] is None and carried["metadata"] is None
    assert carried["tool"] is not None and ToolCallEvent.from_bytes(carried["tool"]) == event


def test_k10_the_relay_emits_a_committed_event_only_while_ingest_has_not_counted_it(
    tables: MotoSessionTable, make_event: Any
) -> None:
    event, changes = committed_changes(tables, make_event)
    published = Published()
    relay = CommittedEventRelay(CountedEventMarkers(tables.client, SESSION_TABLE), published)
    # Given the commit's changes, the instance's own event never counted (it died before its flush)
    # When the audit function hands them to the relay
    relayed = [relay.relay(change) for change in changes]
    # Then the record's event, and only it, is emitted as the call's event
    assert relayed.count(True) == 1
    assert [ToolCallEvent.from_dict(dict(body)) for body in published.events] == [event]
    # And once ingest has counted it, a redelivery of the same changes emits nothing more
    DynamoIngestLedger(tables.client, SESSION_TABLE).count_once(event, marker_expires_at=int(NOW) + 3600)
    assert [relay.relay(change) for change in changes] == [False, False, False]
    assert len(published.events) == 1
