"""D1/D3 as amended: what a tool call's commit writes does not grow with its session's context.

DynamoDB bills a write by the larger of the item's sizes before and after it (1 KB a unit, twice
in a transaction). The units are measured here from outside the store: every item a commit's
transaction names is read (consistent) before and after it. Against the layout that kept the
context in the metadata item (``list_append``), a session holding 200 notes of 300 bytes made
every commit write ~130 units instead of 6, and this test fails there."""

from __future__ import annotations

import math
from typing import Any

from mcp_platform.adapters.dynamodb.codec import item_size
from mcp_platform.adapters.dynamodb.sessions import SessionChanges, SessionStore, ToolCall
from mcp_platform.protocol.clock import ManualClock
from mcp_platform.protocol.tools import APPEND_ONLY, READ_MODIFY_WRITE

NOTE = {"role": "note", "text": "x" * 300}


def _key(action: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    ((_, body),) = action.items()
    key = body.get("Key") or {name: body["Item"][name] for name in ("pk", "sk")}
    return body["TableName"], key


def _size(ddb: Any, table: str, key: dict[str, Any]) -> int:
    item = ddb.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
    return item_size(item) if item else 0


def _commit_units(recording: Any, ddb: Any, store: SessionStore, session_id: str, call_id: str, effect: str) -> int:
    """The write units of one commit of ``effect`` that appends a note (append-only) or only
    commits (read-modify-write), as DynamoDB bills its TransactWriteItems."""
    before: dict[tuple[str, str, str], int] = {}

    def sizes(params: dict[str, Any]) -> None:
        for action in params["TransactItems"]:
            table, key = _key(action)
            before[(table, key["pk"]["S"], key["sk"]["S"])] = _size(ddb, table, key)

    recording.before["transact_write_items"] = sizes
    held, _ = store.load_for_tool_call(session_id, call_id, owner="alice", with_context=effect != APPEND_ONLY)
    append = [NOTE] if effect == APPEND_ONLY else []
    store.commit(held, ToolCall(call_id, "a_tool", {}, {"ok": 1}), SessionChanges(effect, context_append=append))
    del recording.before["transact_write_items"]
    units = 0
    for (table, pk, sk), size in before.items():
        after = _size(ddb, table, {"pk": {"S": pk}, "sk": {"S": sk}})
        units += 2 * max(1, math.ceil(max(size, after) / 1024))
    return units


def _session_holding(store: SessionStore, clock: ManualClock, notes: int, per_call: int = 10) -> str:
    """A session holding ``notes`` notes, appended by commits of ``per_call`` notes each (moto's
    transactions slow down with the table's size: fewer commits, the same context)."""
    session = store.create_session("alice")
    for i in range(0, notes, per_call):
        clock.advance(0.001)
        held, _ = store.load_for_tool_call(session.id, f"fill-{i}", owner="alice", with_context=False)
        append = [NOTE] * min(per_call, notes - i)
        store.commit(held, ToolCall(f"fill-{i}", "a_tool", {}, {}), SessionChanges(APPEND_ONLY, context_append=append))
    return session.id


def test_a_commits_write_units_do_not_grow_with_the_sessions_context(
    recorded_store: SessionStore, recording: Any, ddb: Any, clock: ManualClock
) -> None:
    """Given sessions holding 1 and 200 notes of ~300 bytes, When each commits one append-only
    call (a note) and one read-modify-write call, Then each commit writes as many units on the
    200-note session as on the 1-note one (the goal: at most 1.5x)."""
    small = _session_holding(recorded_store, clock, 1)
    large = _session_holding(recorded_store, clock, 200)
    assert len(recorded_store.get_session(large, consistent=True).context) == 200
    for effect in (APPEND_ONLY, READ_MODIFY_WRITE):
        clock.advance(0.001)
        on_small = _commit_units(recording, ddb, recorded_store, small, f"small-{effect}", effect)
        on_large = _commit_units(recording, ddb, recorded_store, large, f"large-{effect}", effect)
        assert on_small <= 8, (effect, on_small)  # record, marker, metadata (and the note's item)
        assert on_large <= on_small * 1.5, (effect, on_small, on_large)


def test_an_append_only_load_reads_no_context(recorded_store: SessionStore, recording: Any, clock: ManualClock) -> None:
    """Given a session holding 50 notes, When it is loaded for an append-only call, Then one
    BatchGetItem of the metadata and the marker (bounded: no context in it) and no Query; loaded
    for another call, its context items are read with one Query, oldest first."""
    session_id = _session_holding(recorded_store, clock, 50)
    recording.calls.clear()
    held, _ = recorded_store.load_for_tool_call(session_id, "next", owner="alice", with_context=False)
    assert recording.ops() == ["batch_get_item"] and held.context == []
    (response_item,) = [
        item
        for item in recording.inner.get_item(
            TableName=recorded_store.table_name, Key={"pk": {"S": f"session#{session_id}"}, "sk": {"S": "metadata"}}
        ).values()
        if isinstance(item, dict) and "pk" in item
    ]
    assert item_size(response_item) < 1024
    recording.calls.clear()
    loaded, _ = recorded_store.load_for_tool_call(session_id, "next", owner="alice")
    assert recording.ops() == ["batch_get_item", "query"] and loaded.context == [NOTE] * 50
