"""Task items: every transition conditional, so the endpoint (cancel, update, on any instance)
and the worker (attempt, input, outcome) can race and DynamoDB decides (tasks extension)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.sessions import DynamoGateway, ManualClock
from mcp_platform.adapters.dynamodb.tasks import TaskNotFound, TaskStore, TaskTransitionRefused
from mcp_platform.application.tasks import budget
from mcp_platform.protocol.jsonrpc import LIMIT_EXCEEDED, TOOL_FAILED
from mcp_platform.protocol.tasks import Task, TaskRequest
from tests.unit.adapters.dynamodb.conftest import TablePeek

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


# -- issue 26 item 2: the item keeps room for its outcome -------------------------------------------
def padded(size: int) -> str:
    """Text that takes ``size`` bytes as stored (one byte per character)."""
    return "p" * size


def largest(tasks: TaskStore, task_id: str = "big") -> Task:
    """A task whose request, answers and questions are each at their budget (less a margin for
    the structure around the padding), waiting for its last run."""
    arguments = {"padding": padded(budget.REQUEST_BUDGET_BYTES - 2048)}
    request = TaskRequest({"name": "sized", "arguments": arguments}, "call-1", "2026-07-28", True, {"extensions": {}})
    task = tasks.new_task(task_id, "alice", request, 600)
    tasks.create(task)
    questions = {
        "q": {"method": "elicitation/create", "params": {"message": padded(budget.QUESTIONS_BUDGET_BYTES - 1024)}}
    }
    waiting = tasks.await_input(task_id, questions, "Waiting for input")
    answer = {"action": "accept", "content": {"text": padded(budget.ANSWERS_BUDGET_BYTES - 1024)}}
    return tasks.deliver_input(waiting, {"q": answer})


def test_a_task_at_every_budget_records_a_result_at_its_budget(tasks: TaskStore) -> None:
    """The budgets' arithmetic, against the emulator's 400 KB item limit (it sizes an update as the
    old item plus the new values): the largest request, answers and questions, then the largest
    result and a status message of multi-byte characters, every write accepted."""
    largest(tasks)
    result = {"content": [{"type": "text", "text": padded(budget.OUTCOME_BUDGET_BYTES - 1024)}]}
    done = tasks.finish("big", "completed", result=result, message="é" * budget.MAX_STATUS_MESSAGE)
    assert done.status == "completed" and done.result == result


def test_a_result_over_its_budget_is_recorded_as_limit_exceeded(tasks: TaskStore) -> None:
    """Given the largest task and a 300 KB result (the item would pass 400 KB: the last write was
    refused and the message redelivered), Then the task is failed with -31005 naming the limit."""
    largest(tasks)
    done = tasks.finish("big", "completed", result={"content": [{"type": "text", "text": padded(300_000)}]})
    assert done.status == "failed" and done.result is None and done.error is not None
    assert done.error["code"] == LIMIT_EXCEEDED and done.error["data"]["limit"] == "task_result_bytes"
    assert tasks.get("big").detailed()["error"] == done.error  # and it reads back


@pytest.mark.parametrize("value", [math.nan, 10**200, "x\ud800"], ids=["nan", "10**200", "lone-surrogate"])
def test_an_unstorable_result_is_recorded_as_a_tool_failure(tasks: TaskStore, value: Any) -> None:
    created(tasks)
    done = tasks.finish("t1", "completed", result={"structuredContent": {"v": value}})
    assert done.status == "failed" and done.error is not None and done.error["code"] == TOOL_FAILED
    assert "structuredContent.v" in done.error["message"]


def test_an_error_over_its_budget_keeps_its_code_and_a_clipped_message(tasks: TaskStore) -> None:
    created(tasks)
    error = {"code": -32602, "message": "bad \ud800 " + "m" * 2000, "data": {"echo": padded(200_000)}}
    done = tasks.finish("t1", "failed", error=error, message=error["message"])
    assert done.error == {"code": -32602, "message": ("bad ? " + "m" * 2000)[: budget.MAX_STATUS_MESSAGE]}
    assert done.status_message == done.error["message"]


def test_a_status_note_is_clipped_and_made_well_formed(tasks: TaskStore) -> None:
    created(tasks)
    tasks.note("t1", "step \ud800 " + "n" * 5000)
    assert tasks.get("t1").status_message == ("step ? " + "n" * 5000)[: budget.MAX_STATUS_MESSAGE]
