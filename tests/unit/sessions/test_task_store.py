"""Task items: every transition conditional, so the endpoint (cancel, update, on any instance)
and the worker (attempt, input, outcome) can race and DynamoDB decides (tasks extension)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform import table_schema as ts
from mcp_platform.sessions import DynamoGateway, ManualClock
from mcp_platform.tasks.model import TaskRequest
from mcp_platform.tasks.store import TaskNotFound, TaskStore, TaskTransitionRefused
from tests.unit.sessions.conftest import TablePeek

QUESTIONS = {
    "name": {"method": "elicitation/create", "params": {"message": "Name?"}},
    "confirm": {"method": "elicitation/create", "params": {"message": "Sure?"}},
}


@pytest.fixture
def tasks(ddb: Any, table: str, clock: ManualClock) -> TaskStore:
    return TaskStore(table, DynamoGateway(ddb), clock=clock)


def created(tasks: TaskStore, task_id: str = "t1", ttl_seconds: int = 600) -> Any:
    request = TaskRequest({"name": "slow", "arguments": {}}, "call-1", "2026-07-28", True, {"extensions": {}})
    task = tasks.new_task(task_id, "alice", request, ttl_seconds)
    tasks.create(task)
    return task


def test_a_created_task_reads_back_for_its_owner_only(tasks: TaskStore, peek: TablePeek) -> None:
    task = created(tasks)
    found = tasks.get("t1", "alice")
    assert (found.status, found.request.tool_call_id, found.ttl_ms) == ("working", "call-1", 600_000)
    with pytest.raises(TaskNotFound):
        tasks.get("t1", "bob")  # another principal: as if it did not exist
    item = peek.item(ts.task_pk("t1"), ts.TASK_SK)
    assert item is not None and ts.STATUS not in item  # never in the status/ttl GSI of sessions (D8)
    with pytest.raises(TaskTransitionRefused, match="exists already"):
        tasks.create(task)  # ids are random: a second create of one id is a defect, refused


def test_past_its_ttl_a_task_is_not_found_and_cannot_move(tasks: TaskStore, clock: ManualClock) -> None:
    created(tasks, ttl_seconds=60)
    clock.advance(61)
    with pytest.raises(TaskNotFound):
        tasks.get("t1")
    with pytest.raises(TaskTransitionRefused):
        tasks.begin_attempt("t1")


def test_a_cancel_wins_over_the_outcome_of_a_run_still_going(tasks: TaskStore) -> None:
    """Given a run in progress, when tasks/cancel lands first, then the worker's outcome is refused
    and the task stays cancelled; cancelling again (terminal) is refused too (the ack is the same)."""
    created(tasks)
    assert tasks.begin_attempt("t1").attempts == 1
    assert tasks.cancel("t1", "alice").status == "cancelled"
    with pytest.raises(TaskTransitionRefused):
        tasks.finish("t1", "completed", result={"content": []})
    assert tasks.get("t1").status == "cancelled"
    with pytest.raises(TaskTransitionRefused):
        tasks.cancel("t1", "alice")


def test_another_principal_cannot_cancel(tasks: TaskStore) -> None:
    created(tasks)
    with pytest.raises(TaskTransitionRefused):
        tasks.cancel("t1", "bob")
    assert tasks.get("t1").status == "working"


def test_a_partial_answer_keeps_the_task_waiting_for_the_rest(tasks: TaskStore) -> None:
    created(tasks)
    tasks.begin_attempt("t1")
    tasks.await_input("t1", QUESTIONS, "Waiting for input")
    waiting = tasks.get("t1")
    partial = tasks.deliver_input(waiting, {"name": {"action": "accept", "content": {"name": "Ada"}}})
    assert partial.status == "input_required" and list(partial.input_requests or {}) == ["confirm"]
    complete = tasks.deliver_input(partial, {"confirm": {"action": "accept", "content": {"confirm": True}}})
    assert complete.status == "working" and complete.input_requests is None
    assert complete.attempts == 0  # a new round, not a retry: it does not use up the attempts
    assert set(complete.input_responses) == {"name", "confirm"} and complete.round == 3


def test_two_updates_racing_for_one_round_apply_once(tasks: TaskStore) -> None:
    created(tasks)
    tasks.await_input("t1", {"confirm": QUESTIONS["confirm"]}, "Waiting for input")
    read_by_both = tasks.get("t1")
    tasks.deliver_input(read_by_both, {"confirm": {"action": "accept", "content": {"confirm": True}}})
    with pytest.raises(TaskTransitionRefused):
        tasks.deliver_input(read_by_both, {"confirm": {"action": "decline"}})
    assert tasks.get("t1").input_responses["confirm"]["action"] == "accept"


def test_a_failed_task_keeps_its_error_and_diagnostics(tasks: TaskStore) -> None:
    created(tasks)
    error = {"code": -31007, "message": "boom"}
    failed = tasks.finish("t1", "failed", error=error, message="boom")
    assert (failed.status, failed.error, failed.status_message, failed.result) == ("failed", error, "boom", None)
    assert "result" not in failed.detailed() and failed.detailed()["error"] == error
