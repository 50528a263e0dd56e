"""A call's trace id on what it writes to the session table, and on the audit records of those
writes: the commit's record, marker and session metadata; the ingest's record and dedupe marker;
a task. The audit names a trace only for a change the traced request made (a later untraced
write to the same item keeps the old ids in its image, and must not be attributed to them)."""

from __future__ import annotations

from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.audit_trail import to_record
from mcp_platform.adapters.dynamodb.audit_writer import AuditWriter
from mcp_platform.adapters.dynamodb.ingest_ledger import DynamoIngestLedger
from mcp_platform.adapters.dynamodb.sessions import DynamoGateway, ManualClock, SessionStore, ToolCall
from mcp_platform.adapters.dynamodb.stream_images import diff_stream_images, read_stream_change
from mcp_platform.adapters.dynamodb.tasks import TaskStore
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.application.sessions.changes import SessionChanges
from mcp_platform.protocol import trace_context
from mcp_platform.protocol.tasks import TaskRequest
from tests.support.session_stream import AUDIT_TABLE, SESSION_TABLE, MotoSessionTable

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def traced_call(call_id: str, span_id: str) -> ToolCall:
    return ToolCall(call_id, "append_note", {"text": "hi"}, {"content": []}, trace_id=TRACE_ID, span_id=span_id)


def audit(tables: MotoSessionTable) -> list[dict[str, Any]]:
    """Every stream record since the last drain, audited as the audit function does; the
    records as ``session_audit`` returns them, in stream order."""
    writer = AuditWriter(tables.client, AUDIT_TABLE)
    audited = []
    for record in tables.drain():
        change = read_stream_change(record)
        item = writer.build_item(change, lambda change=change: diff_stream_images(change.old_image, change.new_image))
        writer.put(item)
        audited.append(to_record(item))
    return audited


def test_a_commit_stamps_its_items_and_the_audit_names_the_trace_of_each_change(tables: MotoSessionTable) -> None:
    # Given a session
    store = SessionStore(SESSION_TABLE, client=tables.client, clock=ManualClock(1_800_000_000.0))
    session = store.create_session("alice")
    audit(tables)  # the creation: untraced
    # When a traced request commits a call in it
    span = trace_context.new_span_id()
    store.commit(session, traced_call("call-1", span), SessionChanges())
    # Then the record, its marker and the session's metadata carry the request's trace and span
    items = {item[ts.SK]["S"].split("#")[0]: item for item in tables.session_items(session.id)}
    for kind in ("tool", "toolcall", ts.METADATA_SK):
        assert items[kind][ts.TRACE_ID] == {"S": TRACE_ID} and items[kind][ts.SPAN_ID] == {"S": span}, kind
    # And the audit record of each of the three changes names the trace
    changes = audit(tables)
    assert sorted(c["item"].split("#")[0] for c in changes) == ["metadata", "tool", "toolcall"]
    assert all(c["trace_id"] == TRACE_ID for c in changes)


def test_an_untraced_write_after_a_traced_one_is_attributed_to_no_trace(tables: MotoSessionTable) -> None:
    # Given a session whose last commit was traced (its metadata holds that request's ids)
    store = SessionStore(SESSION_TABLE, client=tables.client, clock=ManualClock(1_800_000_000.0))
    session = store.create_session("alice")
    store.commit(session, traced_call("call-1", trace_context.new_span_id()), SessionChanges())
    audit(tables)
    # When the session is changed by writes that set no trace (extended, then ended)
    store.extend_expiry(session.id, owner="alice")
    store.end_session(session.id, owner="alice")
    # Then their audit records name no trace, though the new image still holds the old ids
    changes = audit(tables)
    assert [c["event_name"] for c in changes] == ["MODIFY", "MODIFY"]
    assert all(c["new_image"][ts.TRACE_ID] == TRACE_ID for c in changes)
    assert [c["trace_id"] for c in changes] == [None, None]


def test_a_second_request_of_the_same_trace_is_its_own_change(tables: MotoSessionTable) -> None:
    # Given a session committed to by a request of a trace
    store = SessionStore(SESSION_TABLE, client=tables.client, clock=ManualClock(1_800_000_000.0))
    session = store.create_session("alice")
    done = store.commit(session, traced_call("call-1", trace_context.new_span_id()), SessionChanges())
    audit(tables)
    # When a second request of the same trace (a new span) commits again
    store.commit(done.session, traced_call("call-2", trace_context.new_span_id()), SessionChanges())
    # Then the metadata's change is that request's: it names the trace
    metadata = [c for c in audit(tables) if c["item"] == ts.METADATA_SK]
    assert [c["trace_id"] for c in metadata] == [TRACE_ID]


def test_ingest_writes_the_trace_on_the_record_and_the_dedupe_marker(tables: MotoSessionTable, make_event) -> None:
    # Given a live session and the event of a read-only call in it (ingest writes its record)
    store = SessionStore(SESSION_TABLE, client=tables.client, clock=ManualClock(1_800_000_000.0))
    session = store.create_session("alice")
    span = trace_context.new_span_id()
    event: ToolCallEvent = make_event(session_id=session.id, principal="alice", trace_id=TRACE_ID, span_id=span)
    ledger = DynamoIngestLedger(tables.client, SESSION_TABLE)
    # When ingest records and counts it
    ledger.record_tool_call(event, now=1_800_000_000.0)
    ledger.count_once(event, marker_expires_at=1_900_000_000)
    # Then the tool-call record and the dedupe marker carry the event's trace and span
    record = next(i for i in tables.session_items(session.id) if i[ts.SK]["S"].startswith(ts.TOOL_RECORD_PREFIX))
    marker = tables.client.get_item(
        TableName=SESSION_TABLE,
        Key={ts.PK: {"S": ts.event_dedupe_pk(event.event_id)}, ts.SK: {"S": ts.EVENT_DEDUPE_SK}},
    )["Item"]
    for item in (record, marker):
        assert (item[ts.TRACE_ID]["S"], item[ts.SPAN_ID]["S"]) == (TRACE_ID, span)


def test_an_untraced_event_writes_no_trace_attributes(tables: MotoSessionTable, make_event) -> None:
    # Given an event from before trace ids (or of an untraced caller)
    event: ToolCallEvent = make_event(session_id=None)
    # When ingest counts it / Then its marker has no trace attributes (never an empty string)
    DynamoIngestLedger(tables.client, SESSION_TABLE).count_once(event, marker_expires_at=1_900_000_000)
    marker = tables.client.get_item(
        TableName=SESSION_TABLE,
        Key={ts.PK: {"S": ts.event_dedupe_pk(event.event_id)}, ts.SK: {"S": ts.EVENT_DEDUPE_SK}},
    )["Item"]
    assert ts.TRACE_ID not in marker and ts.SPAN_ID not in marker


def test_a_task_keeps_its_requests_span_and_names_its_trace(tables: MotoSessionTable) -> None:
    # Given a task created by a traced request
    trace = trace_context.request_trace({"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01", "tracestate": "a=1"})
    request = TaskRequest(
        {"name": "slow", "arguments": {}},
        "call-1",
        "2026-07-28",
        True,
        traceparent=trace.traceparent,
        tracestate=trace.state,
    )
    tasks = TaskStore(SESSION_TABLE, DynamoGateway(tables.client), clock=ManualClock(1_800_000_000.0))
    # When it is written and read back
    tasks.create(tasks.new_task("t1", "alice", request, 600))
    stored = tasks.get("t1")
    item = tables.client.get_item(
        TableName=SESSION_TABLE, Key={ts.PK: {"S": ts.task_pk("t1")}, ts.SK: {"S": ts.TASK_SK}}
    )
    # Then the item names the trace at its top level, and the worker's run continues the request's span
    assert item["Item"][ts.TRACE_ID] == {"S": TRACE_ID}
    run = trace_context.continue_trace(stored.request.traceparent, stored.request.tracestate)
    assert (run.trace_id, run.parent_id, run.state) == (TRACE_ID, trace.span_id, "a=1")
