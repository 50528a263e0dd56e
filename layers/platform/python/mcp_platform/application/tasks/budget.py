"""What one task item may hold, part by part, so that its last write always fits.

A task item (``tasks.store``) holds what the client sent (the call's request, its answers), what
the tool asked (its questions), the outcome (a result or an error) and a status message.
DynamoDB refuses an item over 400 KiB. A write refused at the end would leave the task without
its outcome and the worker's message redelivered until it is dead-lettered, so each part gets
a budget (sizes as DynamoDB counts them, :mod:`mcp_platform.application.stored_form`):

* what the client sends is refused up front (-32602 or -31005) when it does not fit
  (:func:`admit_request`, :func:`admit_answers`);
* what the tool produces is recorded within its budget: a question set or a result too large
  (or not storable) is recorded as a clear error instead (:func:`recordable_outcome`,
  :func:`questions_refusal`), and the status message is clipped.

Together, with room for the keys and the bookkeeping attributes: 136 + 64 + 32 + 128 + 2 KiB,
about 362 KiB. The emulator of the local platform (moto) sizes an update as the old item plus
the new values; at the last write that is still below 400 KiB (the questions are gone by then).
"""

from __future__ import annotations

from typing import Any

from mcp_platform.application.sessions.commit_plan import CALL_RECORD_BUDGET_BYTES
from mcp_platform.application.stored_form import STORED_FORM
from mcp_platform.protocol.jsonrpc import INVALID_PARAMS, LIMIT_EXCEEDED, TOOL_FAILED, JsonRpcError
from mcp_platform.protocol.storability import Inadmissible, TooLarge, check_within
from mcp_platform.protocol.tasks import FAILED

ITEM_LIMIT_BYTES = 400 * 1024
REQUEST_BUDGET_BYTES = CALL_RECORD_BUDGET_BYTES + 8 * 1024
"""The tools/call request: its arguments (admitted to the call-record budget), the progress
token, the client capabilities (4 KiB at most) and the names around them."""
ANSWERS_BUDGET_BYTES = 64 * 1024
"""Every answer the task holds (``ask_first`` and ``tasks/update``), as much as one 2026
``requestState`` can carry."""
QUESTIONS_BUDGET_BYTES = 32 * 1024
OUTCOME_BUDGET_BYTES = 128 * 1024
"""The result, or the error (with its status message)."""
MAX_STATUS_MESSAGE = 500
"""Characters of a status message (progress, log line or error message): at most 2 KB."""
KEYS_AND_BOOKKEEPING_BYTES = 4 * 1024
BUDGETS_BYTES = (
    REQUEST_BUDGET_BYTES
    + ANSWERS_BUDGET_BYTES
    + QUESTIONS_BUDGET_BYTES
    + OUTCOME_BUDGET_BYTES
    + 4 * MAX_STATUS_MESSAGE
    + KEYS_AND_BOOKKEEPING_BYTES
)
assert BUDGETS_BYTES < ITEM_LIMIT_BYTES, "the parts of a task item must fit one item together"


def _refusal(exc: Inadmissible, limit: str) -> JsonRpcError:
    """Too large is a limit (-31005, not worth retrying as is); not storable is invalid (-32602)."""
    if isinstance(exc, TooLarge):
        return JsonRpcError(LIMIT_EXCEEDED, f"A task cannot keep this: {exc}", {"limit": limit, "max": exc.budget})
    return JsonRpcError(INVALID_PARAMS, str(exc))


def admit_request(request: dict[str, Any]) -> None:
    """The call's request as the task keeps it (``TaskRequest.to_map``), before it is written."""
    try:
        check_within(STORED_FORM, request, "params", REQUEST_BUDGET_BYTES)
    except Inadmissible as exc:
        raise _refusal(exc, "task_request_bytes") from exc


def admit_answers(answers: dict[str, Any]) -> None:
    """Every answer the task would hold after this write (each was admitted by ``check_answer``)."""
    try:
        check_within(STORED_FORM, answers, "inputResponses", ANSWERS_BUDGET_BYTES)
    except Inadmissible as exc:
        raise _refusal(exc, "task_answers_bytes") from exc


def status_text(text: str) -> str:
    """A status message as kept: clipped, and well-formed (a lone surrogate becomes ``?``)."""
    return text[:MAX_STATUS_MESSAGE].encode("utf-8", "replace").decode("utf-8")


def questions_refusal(tool: str, questions: dict[str, Any]) -> dict[str, Any] | None:
    """The error to record instead of ``questions`` when the task cannot keep them, else None."""
    try:
        check_within(STORED_FORM, questions, "inputRequests", QUESTIONS_BUDGET_BYTES)
    except Inadmissible as exc:
        return {"code": TOOL_FAILED, "message": status_text(f"Tool {tool} asked what a task cannot keep: {exc}")}
    return None


def recordable_outcome(status: str, result: Any, error: Any, message: str | None) -> tuple[str, Any, Any, str | None]:
    """(status, result, error, message) as the task's last write can hold them: a result that
    is too large, or not storable, is replaced by an error that says so (the task fails); an
    error that is keeps its code and its clipped message, and loses its data."""
    if message is not None:
        message = status_text(message)
    if result is not None:
        try:
            check_within(STORED_FORM, result, "result", OUTCOME_BUDGET_BYTES)
        except Inadmissible as exc:
            text = status_text(f"The task's result cannot be kept: {exc}")
            if isinstance(exc, TooLarge):
                data = {"limit": "task_result_bytes", "max": OUTCOME_BUDGET_BYTES}
                return FAILED, None, {"code": LIMIT_EXCEEDED, "message": text, "data": data}, text
            return FAILED, None, {"code": TOOL_FAILED, "message": text}, text
    if error is not None:
        try:
            check_within(STORED_FORM, error, "error", OUTCOME_BUDGET_BYTES - 4 * MAX_STATUS_MESSAGE)
        except Inadmissible:
            error = _clipped_error(error)
    return status, result, error, message


def _clipped_error(error: Any) -> dict[str, Any]:
    found = error if isinstance(error, dict) else {}
    code, text = found.get("code"), found.get("message")
    return {
        "code": code if type(code) is int and -(2**31) <= code < 2**31 else TOOL_FAILED,
        "message": status_text(text if isinstance(text, str) else "The task failed"),
    }
