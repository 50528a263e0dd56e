"""Tool calls: D4 idempotent records, D10 commit transaction (conditions, token, limits,
retry policy, error shapes) and the AWS call budget of a tools/call."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from amazondax.DaxError import DaxServiceError
from botocore.exceptions import ClientError

from mcp_platform.adapters.dynamodb.sessions import (
    ConditionCheck,
    DuplicateToolCall,
    ExtraPut,
    IdempotencyKeyReused,
    IdempotencyTokenReused,
    InvalidCursor,
    ManualClock,
    PreconditionFailed,
    SessionEnded,
    SessionExpired,
    SessionNotFound,
    SessionStore,
    ToolCall,
    TransactionConflict,
    TransactionTooLarge,
    VersionConflict,
)
from mcp_platform.adapters.dynamodb.sessions.transaction import client_request_token
from mcp_platform.application.sessions.changes import SessionChanges


def call(call_id: str = "call-1", result: Any = None, started_at: float | None = None) -> ToolCall:
    return ToolCall(
        call_id, "echo", {"text": "hi"}, result if result is not None else {"text": "hi"}, started_at=started_at
    )


def cancelled(*codes: str) -> ClientError:
    reasons = [{"Code": code} for code in codes]
    message = f"Transaction cancelled, please refer cancellation reasons for specific reasons [{', '.join(codes)}]"
    response: Any = {
        "Error": {"Code": "TransactionCanceledException", "Message": message},
        "CancellationReasons": reasons,
    }
    return ClientError(response, "TransactWriteItems")


def test_budget_tools_call_is_one_read_plus_one_transaction(recorded_store: SessionStore, recording: Any) -> None:
    """D10/X4 budget: Given a session, When the endpoint loads it for a tool call and commits,
    Then exactly 2 AWS calls: one consistent BatchGetItem and one TransactWriteItems."""
    session = recorded_store.create_session("alice")
    recorded_store.gateway.reset_counts()
    recording.calls.clear()
    held, replay = recorded_store.load_for_tool_call(session.id, "call-1", owner="alice")
    done = recorded_store.commit(held, call(), SessionChanges(context_append=[{"role": "tool", "text": "hi"}]))
    assert replay is None and recorded_store.gateway.calls == {"batch_get_item": 1, "transact_write_items": 1}
    assert recording.calls[0][1]["RequestItems"][recorded_store.table_name]["ConsistentRead"] is True
    assert done.session.version == 2 and done.session.context == [{"role": "tool", "text": "hi"}]
    assert recorded_store.get_session(session.id, consistent=True) == done.session


def test_d10_commit_writes_record_marker_and_update_in_one_transaction(
    recorded_store: SessionStore, recording: Any, clock: ManualClock, peek: Any
) -> None:
    """D1/D7/D10: Given a held session, When a tool call is committed 100 s later, Then one
    TransactWriteItems with a ClientRequestToken derived from the call id and the content holds the record
    (tool#<ISO8601>#<id>), the marker (toolcall#<id>) and the metadata Update whose own
    condition is "alive AND version" (no ConditionCheck on the same item); ttl slides."""
    session = recorded_store.create_session("alice")
    clock.advance(100)
    recording.calls.clear()
    done = recorded_store.commit(session, call(started_at=clock.now() - 1), SessionChanges())
    ((op, params),) = recording.calls
    assert op == "transact_write_items"
    assert params["ClientRequestToken"] == client_request_token("call-1", params["TransactItems"])
    kinds = [next(iter(a)) for a in params["TransactItems"]]
    assert kinds == ["Put", "Put", "Update"]
    update = params["TransactItems"][2]["Update"]
    assert update["ConditionExpression"] == (
        "attribute_exists(#pk) AND #ttl > :now AND #st = :active AND #v = :expected"
    )
    assert done.session.ttl == session.ttl + 100
    assert peek.sks() == ["metadata", "tool#2027-01-15T08:01:39.000000Z#call-1", "toolcall#call-1"]
    marker = peek.item(f"session#{session.id}", "toolcall#call-1")
    assert marker["record_sk"] == {"S": done.result.record_sk} and marker["result"] == {"M": {"text": {"S": "hi"}}}


def test_d10_token_is_36_chars_and_changes_with_the_content(recorded_store: SessionStore, recording: Any) -> None:
    """D10: Given a tool call id longer than 36 chars, When committed, Then the token is a
    36-char hash; the same id with other content (a rebuilt commit) gets another token, so
    DynamoDB never sees one token with two contents (IdempotentParameterMismatch)."""
    session = recorded_store.create_session("alice")
    recording.calls.clear()
    long_id = "x" * 80
    done = recorded_store.commit(session, call(long_id), SessionChanges())
    items = recording.calls[0][1]["TransactItems"]
    token = recording.calls[0][1]["ClientRequestToken"]
    assert len(token) == 36 and token != long_id[:36] and done.result.tool_call_id == long_id
    assert client_request_token(long_id, items) == token
    changed = [*items[:2], {"Update": {**items[2]["Update"], "UpdateExpression": "SET #v = #v + :one"}}]
    assert client_request_token(long_id, changed) != token


def test_d4_d10_replayed_tool_call_yields_one_record_and_the_original_result(
    store: SessionStore, clock: ManualClock, peek: Any
) -> None:
    """D4/D10: Given a committed tool call, When the same id is committed again (a retry that
    re-ran the tool later, with another result), Then DuplicateToolCall carries the ORIGINAL
    result, one record exists, and load_for_tool_call reports the replay."""
    session = store.create_session("alice")
    first = store.commit(session, call(result={"n": 1}), SessionChanges())
    clock.advance(5)
    with pytest.raises(DuplicateToolCall) as dup:
        store.commit(first.session, call(result={"n": 2}), SessionChanges())
    assert dup.value.original.result == {"n": 1} and dup.value.original == first.result
    assert [sk for sk in peek.sks() if sk.startswith("tool#")] == [first.result.record_sk]
    _, replay = store.load_for_tool_call(session.id, "call-1", owner="alice")
    assert replay == first.result


def test_d4_record_tool_call_duplicate_is_silent_success(store: SessionStore, clock: ManualClock, peek: Any) -> None:
    """D4: Given a recorded tool call, When recorded again with the same id, Then no error, the
    original result comes back, and there is still one record."""
    session = store.create_session("alice")
    original = store.record_tool_call(session.id, call(result="first"))
    clock.advance(3)
    again = store.record_tool_call(session.id, call(result="second"))
    assert again == original and again.result == "first"
    assert len([sk for sk in peek.sks() if sk.startswith("tool#")]) == 1


def test_d4_an_id_taken_by_another_request_never_answers_with_its_result(
    recorded_store: SessionStore, recording: Any, peek: Any
) -> None:
    """D4 (README, idempotent tools/call): Given a call committed under an id for one request,
    When another request (another digest) comes with the same id, Then the store refuses it with
    IdempotencyKeyReused on every path (the load, the commit's marker condition, a token
    replay, record_tool_call) while the same request still replays the original; nothing of
    the second request is stored."""
    session = recorded_store.create_session("alice")
    first = recorded_store.commit(session, replace(call("k"), request_hash="digest-a"), SessionChanges())
    other = replace(call("k", result={"text": "other"}), arguments={"text": "other"}, request_hash="digest-b")
    with pytest.raises(IdempotencyKeyReused):
        recorded_store.load_for_tool_call(session.id, "k", owner="alice", request_hash="digest-b")
    _, replay = recorded_store.load_for_tool_call(session.id, "k", owner="alice", request_hash="digest-a")
    assert replay == first.result
    with pytest.raises(IdempotencyKeyReused):  # the race: loaded before the winner committed
        recorded_store.commit(session, other, SessionChanges())
    with pytest.raises(DuplicateToolCall) as same:
        recorded_store.commit(session, replace(call("k", result="rerun"), request_hash="digest-a"), SessionChanges())
    assert same.value.original == first.result
    with pytest.raises(IdempotencyKeyReused):
        recorded_store.record_tool_call(session.id, other)

    def mismatch(_: dict[str, Any]) -> None:
        raise ClientError({"Error": {"Code": "IdempotentParameterMismatchException", "Message": "m"}}, "Tx")

    recording.before["transact_write_items"] = mismatch  # the token replay path
    with pytest.raises(IdempotencyKeyReused):
        recorded_store.commit(first.session, other, SessionChanges())
    with pytest.raises(IdempotencyKeyReused):
        recorded_store.record_tool_call(session.id, other)
    records = [peek.item(item["pk"]["S"], item["sk"]["S"]) for item in peek.items() if item["sk"]["S"] != "metadata"]
    assert [r["arguments"] for r in records if "arguments" in r] == [{"M": {"text": {"S": "hi"}}}]
    assert recorded_store.get_session(session.id, consistent=True).tool_calls == 1


def test_d4_record_tool_call_on_expired_session_is_refused(store: SessionStore, clock: ManualClock) -> None:
    """D4/D6: Given an expired session, When a tool call is recorded, Then SessionExpired."""
    session = store.create_session("alice")
    clock.advance(601)
    with pytest.raises(SessionExpired):
        store.record_tool_call(session.id, call())


def test_d10_commit_on_session_ended_elsewhere_fails_on_alive_condition(
    recorded_store: SessionStore, store: SessionStore, recording: Any
) -> None:
    """D10: Given a held session that another instance has ended, When committing, Then
    SessionEnded from the Update's alive condition, after exactly one (unretried) call."""
    session = recorded_store.create_session("alice")
    store.end_session(session.id)
    recording.calls.clear()
    with pytest.raises(SessionEnded):
        recorded_store.commit(session, call(), SessionChanges())
    assert recording.ops() == ["transact_write_items"]


def test_d10_commit_on_expired_held_session_makes_no_call(recorded_store: SessionStore, clock: ManualClock) -> None:
    """D6/D10: Given a held session whose ttl has passed, When committing, Then SessionExpired
    without any AWS call."""
    session = recorded_store.create_session("alice")
    clock.advance(601)
    recorded_store.gateway.reset_counts()
    with pytest.raises(SessionExpired):
        recorded_store.commit(session, call(), SessionChanges())
    assert recorded_store.gateway.total_calls == 0


def test_d10_version_conflict_is_not_retried_and_carries_current(
    recorded_store: SessionStore, store: SessionStore, recording: Any, sleeps: list[float]
) -> None:
    """D10: Given a held session another writer has appended to, When committing, Then
    VersionConflict after ONE call (no retry, no extra read: ALL_OLD), carrying the current
    session; committing again with it succeeds."""
    session = recorded_store.create_session("alice")
    store.append_context(session.id, ["meanwhile"])
    recording.calls.clear()
    with pytest.raises(VersionConflict) as err:
        recorded_store.commit(session, call(), SessionChanges())
    assert recording.ops() == ["transact_write_items"] and sleeps == []
    assert err.value.current is not None and err.value.current.version == 2
    done = recorded_store.commit(err.value.current, call(), SessionChanges(context_append=["tool said hi"]))
    assert done.session.version == 3
    # The order of the context: the time of each write, then its id (both at one instant here).
    assert sorted(store.get_session(session.id, consistent=True).context) == ["meanwhile", "tool said hi"]


def test_d10_failed_condition_check_names_the_precondition_and_is_not_retried(
    recorded_store: SessionStore, recording: Any, peek: Any, sleeps: list[float]
) -> None:
    """D10: Given a tool whose ConditionCheck (quota item must exist) fails, When committing,
    Then PreconditionFailed names it (index 4, label "quota"), one call, nothing written."""
    session = recorded_store.create_session("alice")
    recording.calls.clear()
    before = peek.sks()
    with pytest.raises(PreconditionFailed) as err:
        recorded_store.commit(
            session,
            call(),
            SessionChanges(
                extra_puts=[ExtraPut({"pk": "resource#r1", "sk": "owner", "by": "alice"}, label="claim")],
                condition_checks=[ConditionCheck({"pk": "quota#alice", "sk": "metadata"}, exists=True, label="quota")],
            ),
        )
    assert (err.value.index, err.value.label, err.value.code) == (4, "quota", "ConditionalCheckFailed")
    assert recording.ops() == ["transact_write_items"] and sleeps == [] and peek.sks() == before


def test_d10_extra_put_is_written_atomically_and_its_condition_reported(store: SessionStore, peek: Any) -> None:
    """D10: Given a tool that claims a resource with attribute_not_exists, When two different
    tool calls claim it, Then the first commits everything and the second fails with the
    claim's label and writes nothing."""
    session = store.create_session("alice")
    claim = ExtraPut({"pk": "resource#r1", "sk": "owner"}, if_absent=True, label="claim")
    done = store.commit(session, call("c1"), SessionChanges(extra_puts=[claim]))
    assert peek.item("resource#r1", "owner") is not None
    with pytest.raises(PreconditionFailed) as err:
        store.commit(done.session, call("c2"), SessionChanges(extra_puts=[claim]))
    assert (err.value.label, err.value.index) == ("claim", 3)
    assert peek.item(f"session#{session.id}", "toolcall#c2") is None


def test_d10_limits_checked_before_sending(recorded_store: SessionStore) -> None:
    """D10 (corrected limits): Given more than 100 actions or more than 4 MB, When committing,
    Then TransactionTooLarge without any call; two actions on one item are a ValueError."""
    session = recorded_store.create_session("alice")
    recorded_store.gateway.reset_counts()
    many = [ExtraPut({"pk": f"r#{i}", "sk": "x"}) for i in range(98)]
    with pytest.raises(TransactionTooLarge):
        recorded_store.commit(session, call(), SessionChanges(extra_puts=many))
    big = [ExtraPut({"pk": f"r#{i}", "sk": "x", "blob": "a" * 380_000}) for i in range(12)]
    with pytest.raises(TransactionTooLarge):
        recorded_store.commit(session, call(), SessionChanges(extra_puts=big))
    with pytest.raises(ValueError, match="one item"):
        recorded_store.commit(
            session, call(), SessionChanges(extra_puts=[ExtraPut({"pk": f"session#{session.id}", "sk": "metadata"})])
        )
    assert recorded_store.gateway.total_calls == 0
    assert len(many) + 3 == 101  # 97 extras + 3 own actions would be exactly 100: allowed
    recorded_store.commit(session, call(), SessionChanges(extra_puts=many[:97]))


def test_d10_transaction_conflict_is_retried_via_botocore_hook(
    store: SessionStore, ddb: Any, sleeps: list[float]
) -> None:
    """D10: Given DynamoDB answers TransactionConflict twice (injected with a before-call event
    hook on the real client), When committing, Then it is retried with 50/100 ms backoff and
    the third attempt commits; 3 TransactWriteItems were counted."""
    session = store.create_session("alice")
    failures = [2]

    def conflict(**_: Any) -> Any:
        if failures[0] == 0:
            return None
        failures[0] -= 1
        body = cancelled("None", "None", "TransactionConflict").response
        return SimpleNamespace(status_code=400, headers={}, content=b""), body

    ddb.meta.events.register("before-call.dynamodb.TransactWriteItems", conflict)
    store.gateway.reset_counts()
    done = store.commit(session, call(), SessionChanges())
    assert done.session.version == 2 and sleeps == [0.05, 0.1]
    assert store.gateway.calls == {"transact_write_items": 3}


def test_d10_transaction_conflict_exhausted_raises_typed_error(
    recorded_store: SessionStore, recording: Any, sleeps: list[float]
) -> None:
    """D10: Given a conflict on every attempt (TransactionConflictException shape), When
    committing, Then TransactionConflict after 4 attempts (3 retries)."""
    session = recorded_store.create_session("alice")

    def always(_: dict[str, Any]) -> None:
        raise ClientError({"Error": {"Code": "TransactionConflictException", "Message": "c"}}, "TransactWriteItems")

    recording.before["transact_write_items"] = always
    with pytest.raises(TransactionConflict):
        recorded_store.commit(session, call(), SessionChanges())
    assert recording.ops().count("transact_write_items") == 4 and sleeps == [0.05, 0.1, 0.2]


def test_d10_dax_error_shape_is_understood(
    recorded_store: SessionStore, store: SessionStore, recording: Any, sleeps: list[float]
) -> None:
    """D10/X3: Given the DAX client's error (DaxServiceError: reasons on .cancellation_reasons,
    none in .response, no items), When a conflict then a marker condition failure arrive, Then
    the conflict is retried and the failure becomes DuplicateToolCall via one consistent read."""
    session = recorded_store.create_session("alice")
    original = store.commit(session, call(result="orig"), SessionChanges())
    errors = [
        DaxServiceError(
            "TransactWriteItems",
            "cancelled",
            [4, 37, 38, 39, 58],
            "rid",
            None,
            400,
            [{"Code": "None"}, {"Code": "None"}, {"Code": "TransactionConflict"}],
        ),
        DaxServiceError(
            "TransactWriteItems",
            "cancelled",
            [4, 37, 38, 39, 58],
            "rid",
            None,
            400,
            [{"Code": "None"}, {"Code": "ConditionalCheckFailed"}, {"Code": "None"}],
        ),
    ]
    assert "CancellationReasons" not in errors[0].response

    def dax(_: dict[str, Any]) -> None:
        raise errors.pop(0)

    recording.before["transact_write_items"] = dax
    recording.calls.clear()
    with pytest.raises(DuplicateToolCall) as dup:
        recorded_store.commit(original.session, call(result="rerun"), SessionChanges())
    assert dup.value.original.result == "orig" and sleeps == [0.05]
    assert recording.ops() == ["transact_write_items", "transact_write_items", "get_item"]
    assert recording.calls[-1][1]["ConsistentRead"] is True


def test_d10_idempotent_parameter_mismatch(recorded_store: SessionStore, recording: Any) -> None:
    """D10: Given DynamoDB reports the token was used with other parameters, When the marker
    exists Then DuplicateToolCall, and when it does not Then IdempotencyTokenReused."""
    session = recorded_store.create_session("alice")
    done = recorded_store.commit(session, call("c1"), SessionChanges())

    def mismatch(_: dict[str, Any]) -> None:
        raise ClientError({"Error": {"Code": "IdempotentParameterMismatchException", "Message": "m"}}, "Tx")

    recording.before["transact_write_items"] = mismatch
    with pytest.raises(DuplicateToolCall):
        recorded_store.commit(done.session, call("c1"), SessionChanges())
    with pytest.raises(IdempotencyTokenReused):
        recorded_store.commit(done.session, call("c2"), SessionChanges())


def test_list_tool_calls_paginates_in_time_order(store: SessionStore, clock: ManualClock) -> None:
    """D1/D6: Given 5 committed tool calls, When listed 2 at a time, Then 3 pages in time order
    with an opaque cursor; a forged cursor and a foreign owner are refused."""
    held = store.create_session("alice")
    for i in range(5):
        clock.advance(1)
        held = store.commit(held, call(f"c{i}"), SessionChanges()).session
    ids, cursor, pages = [], None, 0
    while True:
        page = store.list_tool_calls(held.id, owner="alice", limit=2, cursor=cursor, consistent=True)
        ids += [r.tool_call_id for r in page.records]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert ids == [f"c{i}" for i in range(5)] and pages == 3
    with pytest.raises(InvalidCursor):
        store.list_tool_calls(held.id, cursor="bm90LWpzb24=", consistent=False)
    with pytest.raises(SessionNotFound):
        store.list_tool_calls(held.id, owner="bob", consistent=False)
