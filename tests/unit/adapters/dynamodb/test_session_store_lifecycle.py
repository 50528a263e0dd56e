"""Session lifecycle: D1 key layout, D2 optimistic locking, D3 appends, D5 ttl seconds,
D6 expiry filtering, D7 sliding expiry, D8 expiring index, D9/D11 table settings."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import require_epoch_seconds
from mcp_platform.adapters.dynamodb.sessions import (
    InvalidTtl,
    ManualClock,
    SessionAlreadyExists,
    SessionEnded,
    SessionExpired,
    SessionNotFound,
    SessionStore,
    VersionConflict,
)
from mcp_platform.application.sessions.errors import ExpiryNotExtended
from mcp_platform.application.sessions.retry import Backoff
from mcp_platform.config import CONTEXT_IN_LIST


def test_d1_create_writes_metadata_item_under_session_key(store: SessionStore, peek: Any) -> None:
    """D1: Given an owner, When a session is created, Then pk=session#<id>, sk=metadata holds
    owner, status, version 1, ttl and the kind, and no context (D1 as amended: the context is
    kept in items of its own); the id is minted server-side."""
    session = store.create_session("alice", attributes={"client": "ide"})
    item = peek.item(f"session#{session.id}", "metadata")
    assert item is not None and len(session.id) >= 32
    assert item["owner"] == {"S": "alice"} and item["status"] == {"S": "active"}
    assert item["version"] == {"N": "1"} and item["ttl"] == {"N": str(session.ttl)}
    assert "context" not in item and item["kind"] == {"S": "application"}
    assert item["attributes"] == {"M": {"client": {"S": "ide"}}}


def test_d1_create_with_taken_id_is_refused(store: SessionStore) -> None:
    """D1: Given a session id in use, When it is created again, Then SessionAlreadyExists
    (attribute_not_exists), and the original is untouched."""
    fixed = "fixed-id-" + "0" * 23  # the minted format: 32 URL-safe characters
    store.create_session("alice", session_id=fixed)
    with pytest.raises(SessionAlreadyExists):
        store.create_session("mallory", session_id=fixed)
    assert store.get_session(fixed, consistent=True).owner == "alice"


def test_d5_ttl_is_epoch_seconds_from_configured_duration(store: SessionStore, clock: ManualClock) -> None:
    """D5: Given a 600 s duration, When created, Then ttl = floor(now) + 600 (seconds)."""
    assert store.create_session("alice").ttl == int(clock.now()) + 600


def test_d5_millisecond_ttl_refused_at_write_time(ddb: Any, table: str, peek: Any) -> None:
    """D5: Given a clock that (wrongly) returns milliseconds, When a session is created, Then
    InvalidTtl is raised and nothing is written."""
    millis = ManualClock(1_800_000_000_000.0)
    store = SessionStore(table, client=ddb, clock=millis, ttl_seconds=600)
    with pytest.raises(InvalidTtl):
        store.create_session("alice")
    assert peek.items() == []
    for bad in (1_800_000_000_000, -1, 0, 1.5, True, "1800000000"):
        with pytest.raises(InvalidTtl):
            require_epoch_seconds(bad)


def test_d6_expired_but_not_deleted_is_not_served(store: SessionStore, clock: ManualClock, peek: Any) -> None:
    """D6: Given a session whose ttl has passed but whose item DynamoDB has not deleted, When
    it is read (consistent or not), Then SessionExpired (a SessionNotFound)."""
    session = store.create_session("alice")
    clock.set(session.ttl)  # ttl <= now
    assert peek.item(f"session#{session.id}", "metadata") is not None
    for consistent in (True, False):
        with pytest.raises(SessionExpired):
            store.get_session(session.id, owner="alice", consistent=consistent)


def test_d6_other_owner_gets_plain_not_found(store: SessionStore) -> None:
    """D6/auth: Given alice's session, When bob reads it, Then exactly SessionNotFound, the
    same error as a missing id (no existence oracle)."""
    session = store.create_session("alice")
    with pytest.raises(SessionNotFound) as foreign:
        store.get_session(session.id, owner="bob", consistent=True)
    with pytest.raises(SessionNotFound) as missing:
        store.get_session("no-such-id", owner="bob", consistent=True)
    assert type(foreign.value) is type(missing.value) is SessionNotFound


def test_d6_get_is_one_call(recorded_store: SessionStore, recording: Any) -> None:
    """D6/budget: Given a live session, When got (either consistency), Then exactly 1 AWS call."""
    session = recorded_store.create_session("alice")
    for consistent in (True, False):
        recorded_store.gateway.reset_counts()
        assert recorded_store.get_session(session.id, owner="alice", consistent=consistent).id == session.id
        assert recorded_store.gateway.total_calls == 1


def test_d3_append_is_an_update_of_the_metadata_and_a_context_item(
    recorded_store: SessionStore, recording: Any
) -> None:
    """D3 (as amended): Given a session, When messages are appended twice, Then each append is
    ONE UpdateItem of the metadata (no read: its version, the context's size and item count)
    then ONE PutItem of a context item holding the entries; order is kept and the version grows."""
    session = recorded_store.create_session("alice")
    recorded_store.gateway.reset_counts()
    recording.calls.clear()
    v2 = recorded_store.append_context(session.id, [{"role": "user", "text": "hi"}])
    v3 = recorded_store.append_context(session.id, [{"role": "assistant", "text": "hello", "score": 0.5}])
    assert recording.ops() == ["update_item", "put_item"] * 2
    update, put = recording.calls[0][1], recording.calls[1][1]
    assert "list_append" not in update["UpdateExpression"] and "#ci = if_not_exists(#ci" in update["UpdateExpression"]
    assert put["Item"]["sk"]["S"].startswith("ctx#") and put["Item"]["context"] == {
        "L": [{"M": {"role": {"S": "user"}, "text": {"S": "hi"}}}]
    }
    assert (v2, v3) == (2, 3)
    got = recorded_store.get_session(session.id, consistent=True)
    assert got.context == [{"role": "user", "text": "hi"}, {"role": "assistant", "text": "hello", "score": 0.5}]


def test_d3_append_in_the_list_layout_is_one_update_of_the_metadata_list(
    recording: Any, table: str, clock: ManualClock, backoff: Backoff
) -> None:
    """D3 as releases before the context items wrote it (``compatible_with=0.1``, what a
    deployment writes while such a release may still serve): Given a store in the list layout,
    When messages are appended twice, Then each append is ONE UpdateItem with ``list_append`` on
    the metadata and no item is Put; the context reads back in order."""
    listing = SessionStore(
        table, client=recording, clock=clock, backoff=backoff, ttl_seconds=600, context_layout=CONTEXT_IN_LIST
    )
    session = listing.create_session("alice")
    recording.calls.clear()
    v2 = listing.append_context(session.id, ["hi"])
    v3 = listing.append_context(session.id, ["hello"])
    assert recording.ops() == ["update_item", "update_item"]
    assert all("list_append" in params["UpdateExpression"] for _, params in recording.calls)
    assert (v2, v3) == (2, 3)
    assert listing.get_session(session.id, consistent=True, with_context=False).context == ["hi", "hello"]


def test_d3_append_to_expired_session_is_refused(store: SessionStore, clock: ManualClock) -> None:
    """D3/D6: Given an expired session, When appending, Then SessionExpired and no change."""
    session = store.create_session("alice")
    clock.advance(601)
    with pytest.raises(SessionExpired):
        store.append_context(session.id, ["late"])
    clock.set(session.ttl - 1)
    assert store.get_session(session.id, consistent=True).context == []


def test_d2_update_reads_consistently_and_checks_version(recorded_store: SessionStore, recording: Any) -> None:
    """D2: Given a session, When update_metadata runs, Then one ConsistentRead GetItem and one
    UpdateItem conditioned on #v = :expected with SET #v = #v + :one."""
    session = recorded_store.create_session("alice")
    recording.calls.clear()
    updated = recorded_store.update_metadata(session.id, lambda s: replace(s, attributes={"n": 1}))
    (get_op, get_params), (upd_op, upd_params) = recording.calls
    assert (get_op, get_params["ConsistentRead"]) == ("get_item", True)
    assert upd_op == "update_item" and "#v = :expected" in upd_params["ConditionExpression"]
    assert "#v = #v + :one" in upd_params["UpdateExpression"]
    assert updated.version == 2 and recorded_store.get_session(session.id, consistent=True).attributes == {"n": 1}


def test_d2_lost_race_is_re_read_recomputed_and_retried(
    recorded_store: SessionStore, recording: Any, store: SessionStore, sleeps: list[float]
) -> None:
    """D2: Given another writer appends between our read and our write, When update_metadata
    runs, Then the conditional write fails once, the change is recomputed on the new state
    and retried after 50 ms; both the append and the update survive."""
    session = recorded_store.create_session("alice")
    raced: list[int] = []

    def race(_: dict[str, Any]) -> None:
        if not raced:
            raced.append(store.append_context(session.id, ["from another writer"]))

    recording.before["update_item"] = race
    updated = recorded_store.update_metadata(
        session.id, lambda s: replace(s, attributes={"count": s.attributes.get("count", 0) + 1})
    )
    final = store.get_session(session.id, consistent=True)
    assert final.context == ["from another writer"] and final.attributes == {"count": 1}
    assert updated.version == final.version == 3 and sleeps == [0.05]


def test_d2_persistent_conflict_raises_version_conflict_after_three_retries(
    recorded_store: SessionStore, recording: Any, store: SessionStore, sleeps: list[float]
) -> None:
    """D2: Given a writer that always wins the race, When update_metadata runs, Then 4 attempts
    (3 retries, 50/100/200 ms) and VersionConflict carrying the latest state."""
    session = recorded_store.create_session("alice")
    recording.before["update_item"] = lambda _: store.append_context(session.id, ["x"]) and None
    with pytest.raises(VersionConflict) as err:
        recorded_store.update_metadata(session.id, lambda s: replace(s, attributes={"k": 1}))
    assert sleeps == [0.05, 0.1, 0.2]
    assert recording.ops().count("update_item") == 4 and err.value.current is not None
    assert err.value.current.version == 5


def test_d2_update_of_expired_session_raises_not_found_not_conflict(store: SessionStore, clock: ManualClock) -> None:
    """D2/D6: Given a session held by the caller that has since expired, When updated, Then
    SessionExpired (not VersionConflict)."""
    session = store.create_session("alice")
    clock.advance(700)
    with pytest.raises(SessionExpired):
        store.update_metadata(session.id, lambda s: replace(s, attributes={"k": 1}), current=session)


def test_d7_extend_slides_ttl(store: SessionStore, clock: ManualClock) -> None:
    """D7: Given a live session, When 300 s later its expiry is extended, Then ttl = now + 600."""
    session = store.create_session("alice")
    clock.advance(300)
    assert store.extend_expiry(session.id) == session.ttl + 300
    assert store.get_session(session.id, consistent=True).ttl == session.ttl + 300


def test_d7_extending_expired_session_is_refused_and_not_resurrected(
    store: SessionStore, clock: ManualClock, peek: Any
) -> None:
    """D7: Given an expired (not yet deleted) session, When extended, Then SessionExpired and
    its stored ttl is unchanged (never resurrected)."""
    session = store.create_session("alice")
    clock.advance(600)
    with pytest.raises(SessionExpired):
        store.extend_expiry(session.id)
    assert peek.item(f"session#{session.id}", "metadata")["ttl"] == {"N": str(session.ttl)}
    with pytest.raises(SessionNotFound):
        store.extend_expiry("never-existed")


def test_d7_a_read_slides_the_ttl_only_past_half_the_lifetime_without_a_version_bump(
    recorded_store: SessionStore, recording: Any, clock: ManualClock, peek: Any
) -> None:
    """D7 for read-only calls: Given a session (ttl 600 s), When slide_expiry is asked with more
    than half of the lifetime left, Then no AWS call; When less than half is left, Then one
    ttl-only UpdateItem conditioned on alive and on moving the ttl forward: ttl = now + 600,
    version and updated_at unchanged."""
    session = recorded_store.create_session("alice")
    before = peek.item(f"session#{session.id}", "metadata")
    clock.advance(300)  # exactly half left: not yet
    recording.calls.clear()
    assert recorded_store.slide_expiry(session, owner="alice") == session and recording.calls == []
    clock.advance(1)
    slid = recorded_store.slide_expiry(session, owner="alice")
    ((operation, params),) = recording.calls
    assert operation == "update_item" and params["UpdateExpression"] == "SET #ttl = :ttl"
    assert params["ConditionExpression"].endswith("AND #ttl < :ttl")
    assert slid == replace(session, ttl=int(clock.now()) + 600)
    after = peek.item(f"session#{session.id}", "metadata")
    assert after == {**before, "ttl": {"N": str(slid.ttl)}}  # the ttl alone changed


def test_d7_sliding_never_resurrects_nor_shortens(store: SessionStore, clock: ManualClock, peek: Any) -> None:
    """D7: Given an expired session, When a read slides its expiry, Then SessionExpired and the
    stored ttl is unchanged; Given a session another writer extended further than the slide
    would, Then the stored ttl stays the later one and the caller sees it."""
    expired = store.create_session("alice")
    clock.advance(600)
    with pytest.raises(SessionExpired):
        store.slide_expiry(expired)
    assert peek.item(f"session#{expired.id}", "metadata")["ttl"] == {"N": str(expired.ttl)}
    held = store.create_session("alice")
    clock.advance(400)
    store.extend_expiry(held.id, seconds=900)  # another instance, configured for longer sessions
    later = store.get_session(held.id, consistent=True).ttl
    assert store.slide_expiry(held).ttl == later
    assert store.get_session(held.id, consistent=True).ttl == later


def test_d7_a_slide_that_dynamodb_refuses_is_a_store_error_and_changes_nothing(
    store: SessionStore, ddb: Any, clock: ManualClock, peek: Any
) -> None:
    """D7: Given a session past half its lifetime, When DynamoDB refuses the ttl-only write for a
    reason other than its condition, Then ExpiryNotExtended (a store error the runner logs; no raw
    botocore error reaches the protocol core) and the stored ttl is unchanged."""
    session = store.create_session("alice")
    clock.advance(301)

    def refuse(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "InternalServerError", "Message": "x"}}, "UpdateItem")

    ddb.meta.events.register("before-call.dynamodb.UpdateItem", refuse, unique_id="refuse")
    try:
        with pytest.raises(ExpiryNotExtended):
            store.slide_expiry(session, owner="alice")
    finally:
        ddb.meta.events.unregister("before-call.dynamodb.UpdateItem", unique_id="refuse")
    assert peek.item(f"session#{session.id}", "metadata")["ttl"] == {"N": str(session.ttl)}


def test_end_session_hides_it_and_refuses_further_writes(store: SessionStore) -> None:
    """D6/D7: Given a session, When ended, Then reads raise SessionEnded and extend/append/end
    are refused; another owner cannot end it."""
    session = store.create_session("alice")
    with pytest.raises(SessionNotFound):
        store.end_session(session.id, owner="bob")
    store.end_session(session.id, owner="alice")
    with pytest.raises(SessionEnded):
        store.get_session(session.id, consistent=False)
    for write in (store.extend_expiry, store.end_session, lambda sid: store.append_context(sid, ["x"])):
        with pytest.raises(SessionEnded):
            write(session.id)


def test_d8_expiring_within_uses_index_and_skips_expired(
    store: SessionStore, clock: ManualClock, recording: Any, table: str
) -> None:
    """D8: Given sessions expiring in 2, 8 and 10 min, one already expired (not deleted) and
    one ended, When asked for the next 9 minutes, Then the 2- and 8-minute ones, via the GSI."""
    t0 = clock.now()
    ids = {}
    for minutes in (2, 8, 10, -1):
        clock.set(t0 - 600 + minutes * 60)
        ids[minutes] = store.create_session("alice").id
    clock.set(t0 - 600 + 60)
    store.end_session(store.create_session("alice").id)
    clock.set(t0)
    found = store.expiring_within(9)
    assert {e.session_id for e in found} == {ids[2], ids[8]}
    assert all(e.owner == "alice" and e.kind == "application" and e.ttl > t0 for e in found)
    spy = SessionStore(table, client=recording, clock=clock)
    spy.expiring_within(9)
    assert recording.calls[0][1]["IndexName"] == ts.STATUS_TTL_INDEX
