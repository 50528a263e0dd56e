"""Commits by declared effect: append-only (no version condition), read-modify-write
(attributes under D2) and the context byte budget that keeps the metadata item bounded."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform.sessions import (
    SessionCapacityExceeded,
    SessionStore,
    ToolCall,
    VersionConflict,
)


def call(call_id: str) -> ToolCall:
    return ToolCall(call_id, "append_note", {"text": "x"}, {"appended": 1})


def test_append_only_commit_has_no_version_condition_and_lands_on_a_newer_version(
    recorded_store: SessionStore, recording: Any, peek: Any
) -> None:
    """D3: Given a held session that another call has since changed, When an append-only
    commit is made from the stale copy, Then it succeeds (condition "alive" + budget only),
    and the stored version counts both writes."""
    held = recorded_store.create_session("alice")
    recorded_store.commit_tool_call(held, call("first"), append_only=True, context_append=["a"])
    recording.calls.clear()
    done = recorded_store.commit_tool_call(held, call("second"), append_only=True, context_append=["b"])
    update = recording.calls[0][1]["TransactItems"][2]["Update"]
    assert ":expected" not in update["ExpressionAttributeValues"]
    assert "#v = :expected" not in update["ConditionExpression"]
    stored = peek.item(f"session#{held.id}", "metadata")
    assert stored["version"] == {"N": str(held.version + 2)}
    assert [e["S"] for e in stored["context"]["L"]] == ["a", "b"]
    assert done.exact is False


def test_read_modify_write_commit_writes_attributes_under_the_version_condition(store: SessionStore) -> None:
    """D2: attributes computed from a stale copy are refused with VersionConflict carrying the
    current state; from the current state they are committed."""
    held = store.create_session("alice")
    first = store.commit_tool_call(held, call("one"), attributes={"counters": {"c": 1}})
    with pytest.raises(VersionConflict) as conflict:
        store.commit_tool_call(held, call("two"), attributes={"counters": {"c": 1}})
    assert conflict.value.current is not None and conflict.value.current.attributes == {"counters": {"c": 1}}
    second = store.commit_tool_call(conflict.value.current, call("two"), attributes={"counters": {"c": 2}})
    assert first.exact and second.session.attributes == {"counters": {"c": 2}}
    assert store.get_session(held.id, consistent=True).attributes == {"counters": {"c": 2}}


def test_attributes_are_never_written_without_the_version_condition(store: SessionStore) -> None:
    held = store.create_session("alice")
    with pytest.raises(ValueError, match="version condition"):
        store.commit_tool_call(held, call("x"), append_only=True, attributes={"a": 1})


def test_context_budget_refuses_the_append_that_would_pass_it_with_a_specific_error(
    ddb: Any, table: str, clock: Any, backoff: Any
) -> None:
    """Bounded session state: Given a 2 KB context budget, When appends fill it, Then the one
    that would pass it is refused with SessionCapacityExceeded (never DynamoDB's item-size
    ValidationException), stored nothing, and the session still serves reads."""
    store = SessionStore(table, client=ddb, clock=clock, backoff=backoff, context_budget_bytes=2048)
    held = store.create_session("alice")
    note = "n" * 400
    for i in range(4):
        store.commit_tool_call(held, call(f"c{i}"), append_only=True, context_append=[note])
    with pytest.raises(SessionCapacityExceeded, match="context budget of 2048 bytes"):
        store.commit_tool_call(held, call("c4"), append_only=True, context_append=[note, note])
    current = store.get_session(held.id, consistent=True)
    assert len(current.context) == 4 and current.version == held.version + 4
    with pytest.raises(SessionCapacityExceeded):  # the plain append API keeps the same budget
        store.append_context(held.id, [note, note])


def test_one_append_larger_than_the_whole_budget_is_refused_before_any_call(
    ddb: Any, table: str, clock: Any, backoff: Any, recording: Any
) -> None:
    store = SessionStore(table, client=recording, clock=clock, backoff=backoff, context_budget_bytes=1024)
    held = store.create_session("alice")
    recording.calls.clear()
    with pytest.raises(SessionCapacityExceeded, match="needs"):
        store.commit_tool_call(held, call("big"), append_only=True, context_append=["x" * 2000])
    assert recording.calls == []
