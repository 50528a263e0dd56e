"""What the store keeps of a tool call (the result once, within a budget) and which ids it
accepts (the minted format only), each refusal made before any AWS call."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.sessions import InvalidCursor, Session, SessionNotFound, SessionStore, ToolCall
from mcp_platform.application.sessions.changes import SessionChanges


def call(call_id: str = "call-1", result: Any = None, arguments: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(call_id, "echo", arguments or {"text": "hi"}, result if result is not None else {"text": "hi"})


def test_f3_the_result_is_stored_once_in_the_marker_and_the_record_points_at_it(store: SessionStore, peek: Any) -> None:
    """Given a committed call, Then the marker holds the result (replay reads it in the same
    BatchGetItem as the session) and the record holds the arguments, the marker's key and the
    result's size: never a second copy of the result."""
    session = store.create_session("alice")
    done = store.commit(session, call(result={"notes": ["n"] * 50}), SessionChanges())
    pk = ts.session_pk(session.id)
    record = peek.item(pk, done.result.record_sk)
    marker = peek.item(pk, ts.tool_call_marker_sk("call-1"))
    assert record is not None and marker is not None
    assert ts.RESULT not in record and marker[ts.RESULT]["M"]["notes"]["L"][0] == {"S": "n"}
    assert record["result_sk"] == {"S": marker["sk"]["S"]} and int(record["result_bytes"]["N"]) > 100
    assert record[ts.ARGUMENTS] == {"M": {"text": {"S": "hi"}}}
    _, replay = store.load_for_tool_call(session.id, "call-1", owner="alice")
    assert replay is not None and replay.result == {"notes": ["n"] * 50}
    (listed,) = store.list_tool_calls(session.id, consistent=True).records
    assert listed.result_sk == marker["sk"]["S"] and listed.result_bytes == int(record["result_bytes"]["N"])


def test_f3_a_call_over_the_record_budget_is_refused_before_any_write(
    recorded_store: SessionStore, recording: Any, peek: Any
) -> None:
    """Arguments and result together over the budget: CallRecordTooLarge, no transaction sent."""
    from mcp_platform.adapters.dynamodb.sessions import CallRecordTooLarge
    from mcp_platform.application.sessions.commit_plan import CALL_RECORD_BUDGET_BYTES

    session = recorded_store.create_session("alice")
    recording.calls.clear()
    big = {"text": "x" * CALL_RECORD_BUDGET_BYTES}
    with pytest.raises(CallRecordTooLarge) as refused:
        recorded_store.commit(session, call(result=big), SessionChanges())
    assert refused.value.budget_bytes == CALL_RECORD_BUDGET_BYTES
    assert refused.value.requested_bytes > CALL_RECORD_BUDGET_BYTES
    with pytest.raises(CallRecordTooLarge):
        recorded_store.record_tool_call(session.id, call(arguments={"a": "y" * 70_000}, result={"b": "z" * 70_000}))
    assert recording.ops() == [] and peek.sks() == [ts.METADATA_SK]


MALFORMED = ["x" * 3000, "short", "A" * 31 + "!", "A" * 33, ""]


@pytest.mark.parametrize("session_id", MALFORMED, ids=["3000-chars", "short", "bad-char", "33-chars", "empty"])
def test_f6_an_id_that_cannot_have_been_minted_is_not_found_with_zero_aws_calls(
    recorded_store: SessionStore, session_id: str
) -> None:
    """Real DynamoDB refuses key values over 2,048 bytes (a ValidationException, which moto does
    not raise): such ids never reach a key. The answer is the unknown id's answer."""
    recorded_store.gateway.reset_counts()
    operations = [
        lambda: recorded_store.get_session(session_id, consistent=True),
        lambda: recorded_store.get_session(session_id, consistent=False),
        lambda: recorded_store.load_for_tool_call(session_id, "call-1", owner="alice"),
        lambda: recorded_store.commit(
            Session(session_id, "alice", "active", 1, ttl=2_000_000_000), call(), SessionChanges()
        ),
        lambda: recorded_store.record_tool_call(session_id, call()),
        lambda: recorded_store.append_context(session_id, [{"text": "x"}]),
        lambda: recorded_store.extend_expiry(session_id),
        lambda: recorded_store.end_session(session_id),
    ]
    for operation in operations:
        with pytest.raises(SessionNotFound):
            operation()
    assert recorded_store.gateway.total_calls == 0


def test_f6_minted_ids_have_the_fixed_format_and_others_cannot_be_created(store: SessionStore) -> None:
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{32}", store.create_session("alice").id) for _ in range(20))
    with pytest.raises(ValueError, match="minted format"):
        store.create_session("alice", session_id="fixed-id")


def test_a_forged_list_cursor_is_refused_before_any_aws_call(recorded_store: SessionStore) -> None:
    """A cursor naming a key the store never issued (here 2,000 characters) never reaches a Query."""
    forged = base64.urlsafe_b64encode(json.dumps({"sk": ts.TOOL_RECORD_PREFIX + "9" * 2000}).encode()).decode()
    recorded_store.gateway.reset_counts()
    with pytest.raises(InvalidCursor):
        recorded_store.list_tool_calls("A" * 32, cursor=forged, consistent=True)
    assert recorded_store.gateway.total_calls == 0
