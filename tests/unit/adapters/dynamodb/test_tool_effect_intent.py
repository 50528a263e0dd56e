"""The tool-facing effect types say what must hold (ExtraPut: if_absent / expect; ConditionCheck:
exists / expect); the store turns that into condition expressions, and DynamoDB decides them."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform.adapters.dynamodb.sessions import (
    ConditionCheck,
    ExtraPut,
    PreconditionFailed,
    SessionStore,
    ToolCall,
)
from mcp_platform.application.sessions.changes import SessionChanges


def call(call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name="claim", arguments={}, result={"content": []})


def test_extra_put_expect_writes_only_over_the_expected_values(store: SessionStore, peek: Any) -> None:
    # Given a resource item owned by alice
    session = store.create_session("alice")
    done = store.commit(
        session, call("c1"), SessionChanges(extra_puts=[ExtraPut({"pk": "r#1", "sk": "x", "by": "alice"})])
    )
    # When a commit overwrites it expecting bob as the owner / Then it fails, naming its label
    handover = ExtraPut({"pk": "r#1", "sk": "x", "by": "carol"}, expect={"by": "bob"}, label="handover")
    with pytest.raises(PreconditionFailed) as refused:
        store.commit(done.session, call("c2"), SessionChanges(extra_puts=[handover]))
    assert refused.value.label == "handover"
    # When it expects alice / Then the write goes through
    handover = ExtraPut({"pk": "r#1", "sk": "x", "by": "carol"}, expect={"by": "alice"}, label="handover")
    store.commit(done.session, call("c3"), SessionChanges(extra_puts=[handover]))
    assert peek.item("r#1", "x")["by"] == {"S": "carol"}


def test_condition_check_exists_absent_and_expected_values(store: SessionStore) -> None:
    # Given a quota item of alice with 3 calls left
    session = store.create_session("alice")
    quota = {"pk": "quota#alice", "sk": "q"}
    session = store.commit(
        session, call("c0"), SessionChanges(extra_puts=[ExtraPut({**quota, "left": 3}, if_absent=True)])
    ).session
    # Then a check that it exists with left=3 passes, and one that it is absent or holds 2 fails
    session = store.commit(
        session, call("c1"), SessionChanges(condition_checks=[ConditionCheck(quota, expect={"left": 3})])
    ).session
    for check in (ConditionCheck(quota, exists=False, label="no quota"), ConditionCheck(quota, expect={"left": 2})):
        with pytest.raises(PreconditionFailed):
            store.commit(session, call(f"c-{check.label}"), SessionChanges(condition_checks=[check]))
    # And a check that another item is absent passes
    store.commit(
        session,
        call("c2"),
        SessionChanges(condition_checks=[ConditionCheck({"pk": "quota#bob", "sk": "q"}, exists=False)]),
    )


def test_intent_builds_conditions_with_placeholders_only(recorded_store: SessionStore, recording: Any) -> None:
    # Given a commit with each kind of intent
    session = recorded_store.create_session("alice")
    recording.calls.clear()
    recorded_store.commit(
        session,
        call("c1"),
        SessionChanges(
            extra_puts=[ExtraPut({"pk": "r#1", "sk": "x"}, if_absent=True), ExtraPut({"pk": "r#2", "sk": "x"})],
            condition_checks=[ConditionCheck({"pk": "session#" + session.id, "sk": "other"}, exists=False)],
        ),
    )
    # Then each condition names attributes and values through placeholders, never inline
    actions = recording.calls[0][1]["TransactItems"]
    assert actions[3]["Put"]["ConditionExpression"] == "attribute_not_exists(#pk)"
    assert actions[3]["Put"]["ExpressionAttributeNames"] == {"#pk": "pk"}
    assert "ConditionExpression" not in actions[4]["Put"]
    assert actions[5]["ConditionCheck"]["ConditionExpression"] == "attribute_not_exists(#key)"


def test_contradictory_intent_is_refused_when_stated() -> None:
    with pytest.raises(ValueError, match="absent"):
        ExtraPut({"pk": "r", "sk": "x"}, if_absent=True, expect={"by": "alice"})
    with pytest.raises(ValueError, match="not exist"):
        ConditionCheck({"pk": "r", "sk": "x"}, exists=False, expect={"by": "alice"})
    with pytest.raises(ValueError, match="key"):
        ConditionCheck({})


def test_the_store_is_given_its_clients_and_never_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an environment naming a table and a region (what Settings.from_env would read)
    monkeypatch.setenv("SESSION_TABLE", "from-env")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    # When a store is built without a client or gateway / Then it refuses instead of building one
    with pytest.raises(TypeError, match="gateway or a client"):
        SessionStore("sessions")
