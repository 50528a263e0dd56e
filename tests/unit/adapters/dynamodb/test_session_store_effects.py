"""Commits by declared effect: append-only (no version condition), read-modify-write
(attributes under D2, or under the versions of the attributes read) and the context byte
budget that keeps the metadata item bounded."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.sessions import (
    AttributeWrites,
    Session,
    SessionCapacityExceeded,
    SessionStore,
    ToolCall,
    VersionConflict,
)
from mcp_platform.adapters.dynamodb.sessions.items import session_from_item
from mcp_platform.application.sessions.changes import SessionChanges
from mcp_platform.protocol.tools import APPEND_ONLY


def call(call_id: str) -> ToolCall:
    return ToolCall(call_id, "append_note", {"text": "x"}, {"appended": 1})


def test_append_only_commit_has_no_version_condition_and_lands_on_a_newer_version(
    recorded_store: SessionStore, recording: Any, peek: Any
) -> None:
    """D3: Given a held session that another call has since changed, When an append-only
    commit is made from the stale copy, Then it succeeds (condition "alive" + budget only),
    and the stored version counts both writes."""
    held = recorded_store.create_session("alice")
    recorded_store.commit(held, call("first"), SessionChanges(APPEND_ONLY, context_append=["a"]))
    recording.calls.clear()
    done = recorded_store.commit(held, call("second"), SessionChanges(APPEND_ONLY, context_append=["b"]))
    update = recording.calls[0][1]["TransactItems"][2]["Update"]
    assert ":expected" not in update["ExpressionAttributeValues"]
    assert "#v = :expected" not in update["ConditionExpression"]
    stored = peek.item(f"session#{held.id}", "metadata")
    assert stored["version"] == {"N": str(held.version + 2)}
    assert "context" not in stored  # D1/D3 as amended: each append is a context item of its own
    assert recorded_store.get_session(held.id, consistent=True).context == ["a", "b"]
    assert done.exact is False


def test_read_modify_write_commit_writes_attributes_under_the_version_condition(store: SessionStore) -> None:
    """D2: attributes computed from a stale copy are refused with VersionConflict carrying the
    current state; from the current state they are committed."""
    held = store.create_session("alice")
    first = store.commit(held, call("one"), SessionChanges(attributes={"counters": {"c": 1}}))
    with pytest.raises(VersionConflict) as conflict:
        store.commit(held, call("two"), SessionChanges(attributes={"counters": {"c": 1}}))
    assert conflict.value.current is not None and conflict.value.current.attributes == {"counters": {"c": 1}}
    second = store.commit(conflict.value.current, call("two"), SessionChanges(attributes={"counters": {"c": 2}}))
    assert first.exact and second.session.attributes == {"counters": {"c": 2}}
    assert store.get_session(held.id, consistent=True).attributes == {"counters": {"c": 2}}


def test_attributes_are_never_written_without_the_version_condition(store: SessionStore) -> None:
    held = store.create_session("alice")
    with pytest.raises(ValueError, match="version condition"):
        store.commit(held, call("x"), SessionChanges(APPEND_ONLY, attributes={"a": 1}))


def counter_write(held: Session, value: int) -> AttributeWrites:
    """An increment's writes: it read ``counters`` at the version ``held`` had, and sets it."""
    return AttributeWrites(seen={"counters": held.attribute_version("counters")}, values={"counters": {"c": value}})


def test_a_commit_conditioned_on_the_attributes_it_read_ignores_appends_and_other_attributes(
    recorded_store: SessionStore, recording: Any, peek: Any
) -> None:
    """D2 per attribute (the store's version arithmetic): Given a held session, When appends and
    a write to another attribute commit after it was read, Then a commit conditioned on the
    ``counters`` version it read still succeeds (no ``#v = :expected``): it writes
    ``attributes.counters`` and ``attribute_versions.counters = seen + 1``, bumps the session's
    version, and leaves the other attribute and its version as they were."""
    held = recorded_store.create_session("alice", attributes={"title": "t"})
    recorded_store.commit(held, call("append"), SessionChanges(APPEND_ONLY, context_append=["a"]))
    recorded_store.update_metadata(held.id, lambda s: replace(s, attributes={**s.attributes, "title": "u"}))
    recording.calls.clear()
    done = recorded_store.commit(held, call("inc"), SessionChanges(by_attribute=counter_write(held, 1)))
    update = recording.calls[0][1]["TransactItems"][2]["Update"]
    assert "#v = :expected" not in update["ConditionExpression"]
    assert update["ConditionExpression"].endswith("AND attribute_not_exists(#avs.#a0)")
    assert update["UpdateExpression"].endswith("#at.#a0 = :new0, #avs.#a0 = :next0")
    stored = session_from_item(peek.item(f"session#{held.id}", "metadata"))
    assert stored.attributes == {"title": "u", "counters": {"c": 1}}
    assert stored.attribute_versions == {"title": 1, "counters": 1}
    assert stored.version == held.version + 3 and stored.context == []  # the context is in its items
    assert recorded_store.get_session(held.id, consistent=True).context == ["a"]
    assert done.exact is False and done.session.attribute_versions == {"counters": 1}


def test_a_commit_conditioned_on_an_attribute_conflicts_when_that_attribute_changed(store: SessionStore) -> None:
    """D2 per attribute: Given two runs that read ``counters`` at version 0, When the first
    commits, Then the second gets VersionConflict naming ``counters``, with the current state;
    rerun from that state it commits at attribute version 2. An unchanged value is conditioned
    on but neither written nor counted."""
    held = store.create_session("alice")
    store.commit(held, call("one"), SessionChanges(by_attribute=counter_write(held, 1)))
    with pytest.raises(VersionConflict) as conflict:
        store.commit(held, call("two"), SessionChanges(by_attribute=counter_write(held, 1)))
    current = conflict.value.current
    assert conflict.value.attributes == ("counters",) and current is not None
    assert current.attributes == {"counters": {"c": 1}} and current.attribute_version("counters") == 1
    second = store.commit(current, call("two"), SessionChanges(by_attribute=counter_write(current, 2)))
    unchanged = store.commit(
        second.session, call("three"), SessionChanges(by_attribute=counter_write(second.session, 2))
    )
    stored = store.get_session(held.id, consistent=True)
    assert stored.attribute_versions == {"counters": 2} == unchanged.session.attribute_versions
    assert stored.attributes == {"counters": {"c": 2}}


def test_a_whole_map_write_counts_each_changed_attribute_once(store: SessionStore) -> None:
    """The arithmetic of writes under the session's version (update_metadata, set_attributes):
    one more for each attribute whose value changes (set, changed or removed), none for the
    others; a reader of an unchanged attribute does not conflict with it."""
    held = store.create_session("alice", attributes={"keep": 1, "change": 1, "drop": 1})
    updated = store.update_metadata(held.id, lambda s: replace(s, attributes={"keep": 1, "change": 2, "add": 1}))
    assert updated.attribute_versions == {"change": 1, "drop": 1, "add": 1}
    stored = store.get_session(held.id, consistent=True)
    assert (stored.attributes, stored.attribute_versions) == (updated.attributes, updated.attribute_versions)
    done = store.commit(held, call("reads-keep"), SessionChanges(by_attribute=AttributeWrites(seen={"keep": 0})))
    with pytest.raises(VersionConflict):
        store.commit(held, call("reads-change"), SessionChanges(by_attribute=AttributeWrites(seen={"change": 0})))
    assert done.session.version == held.version + 1  # a lower bound: the stored version is + 2


def test_an_item_without_attribute_versions_commits_once_under_its_version(
    store: SessionStore, ddb: Any, table: str
) -> None:
    """An item written before attribute versions were kept: the first attribute commit falls
    back to the session's version (D2) and writes the map; the next one is per attribute."""
    held = store.create_session("alice")
    key = {ts.PK: {"S": ts.session_pk(held.id)}, ts.SK: {"S": ts.METADATA_SK}}
    ddb.update_item(TableName=table, Key=key, UpdateExpression="REMOVE attribute_versions")
    old = store.get_session(held.id, consistent=True)
    assert old.attribute_versions is None
    store.commit(old, call("append"), SessionChanges(APPEND_ONLY, context_append=["a"]))
    with pytest.raises(VersionConflict):  # under the version: the append conflicts, this once
        store.commit(old, call("inc"), SessionChanges(by_attribute=counter_write(old, 1)))
    fresh = store.get_session(held.id, consistent=True)
    store.commit(fresh, call("inc"), SessionChanges(by_attribute=counter_write(fresh, 1)))
    migrated = store.get_session(held.id, consistent=True)
    assert migrated.attribute_versions == {"counters": 1} and migrated.attributes == {"counters": {"c": 1}}


def test_two_states_of_a_session_combine_into_the_newest_of_each_part() -> None:
    """What SessionLocks hands the next queued call: the state with the higher version, with
    each attribute that is newer in the other state taken from it, value and version together
    (an attribute the newer state dropped stays dropped)."""
    loaded = Session(
        id="s" * 32,
        owner="alice",
        status="active",
        version=9,  # appends committed elsewhere after this instance's last commit
        ttl=1_000,
        context=["a", "b"],
        attributes={"counters": {"c": 1}, "title": "t"},
        attribute_versions={"counters": 1, "title": 1},
    )
    committed = replace(
        loaded,
        version=7,
        context=["a"],
        attributes={"counters": {"c": 2}},
        attribute_versions={"counters": 2, "title": 2},
    )
    combined = loaded.newest_with(committed)
    assert combined.version == 9 and combined.context == ["a", "b"]
    assert combined.attributes == {"counters": {"c": 2}}
    assert combined.attribute_versions == {"counters": 2, "title": 2}
    assert committed.newest_with(loaded) == combined
    older = replace(loaded, version=3, attribute_versions={"counters": 0})
    assert loaded.newest_with(older) == loaded
    assert replace(loaded, attribute_versions=None).newest_with(committed).attribute_versions is None


def test_written_attributes_must_be_conditioned_on_the_version_read(store: SessionStore) -> None:
    held = store.create_session("alice")
    with pytest.raises(ValueError, match="conditioned"):
        store.commit(held, call("x"), SessionChanges(by_attribute=AttributeWrites(seen={}, values={"a": 1})))
    with pytest.raises(ValueError, match="not both"):
        store.commit(held, call("x"), SessionChanges(attributes={"a": 1}, by_attribute=AttributeWrites(seen={"a": 0})))


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
        store.commit(held, call(f"c{i}"), SessionChanges(APPEND_ONLY, context_append=[note]))
    with pytest.raises(SessionCapacityExceeded, match="context budget of 2048 bytes"):
        store.commit(held, call("c4"), SessionChanges(APPEND_ONLY, context_append=[note, note]))
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
        store.commit(held, call("big"), SessionChanges(APPEND_ONLY, context_append=["x" * 2000]))
    assert recording.calls == []
