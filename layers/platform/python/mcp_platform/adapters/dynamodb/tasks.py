"""Task items in the session table (``pk=task#<id>``, ``sk=task``), every transition conditional.

Each transition names the statuses it may leave, so DynamoDB decides every race between the
endpoint (``tasks/cancel``, ``tasks/update``, on any instance) and the worker: a task cancelled
while its tool runs stays cancelled when the tool returns (the worker's ``finish`` fails its
condition), an answer delivered twice is taken once. Reads are consistent (a ``tasks/get`` on
another instance sees the worker's last write) and an expired task reads as absent (D6), whether
or not TTL has deleted it yet.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.aws_errors import error_code
from mcp_platform.adapters.dynamodb.codec import from_item, require_epoch_seconds, to_attr, to_item
from mcp_platform.application.tasks.budget import recordable_outcome, status_text
from mcp_platform.application.tasks.ports import TaskNotFound, TaskTransitionRefused
from mcp_platform.protocol import trace_context
from mcp_platform.protocol.clock import Clock, SystemClock
from mcp_platform.protocol.tasks import ACTIVE, INPUT_REQUIRED, WORKING, Task, TaskRequest

if TYPE_CHECKING:
    from mcp_platform.adapters.dynamodb.gateway import DynamoGateway

TASK_STATUS = "task_status"  # not ``status``: task items stay out of the status/ttl GSI (D8)
_ATTRS = {
    "status_message": "status_message",
    "result": ts.RESULT,
    "error": "error",
    "input_requests": "input_requests",
    "input_responses": "input_responses",
}


__all__ = ["TaskNotFound", "TaskStore", "TaskTransitionRefused"]


class TaskStore:
    """The task items (``application.tasks.ports.TaskRepository``) in the session table."""

    def __init__(self, table_name: str, gateway: DynamoGateway, *, clock: Clock | None = None) -> None:
        self.table_name = table_name
        self.gateway = gateway
        self.clock: Clock = clock or SystemClock()

    def _key(self, task_id: str) -> dict[str, Any]:
        return to_item({ts.PK: ts.task_pk(task_id), ts.SK: ts.TASK_SK})

    def new_task(self, task_id: str, owner: str, request: TaskRequest, ttl_seconds: int) -> Task:
        now = self.clock.now()
        expires = require_epoch_seconds(math.floor(now) + ttl_seconds)
        return Task(task_id, owner, WORKING, request, now, now, expires, ttl_seconds * 1000)

    def create(self, task: Task) -> None:
        """One conditional PutItem: the task exists before any answer names it."""
        item = {
            ts.PK: ts.task_pk(task.task_id),
            ts.SK: ts.TASK_SK,
            ts.OWNER: task.owner,
            TASK_STATUS: task.status,
            "request": task.request.to_map(),
            ts.CREATED_AT: task.created_at,
            ts.UPDATED_AT: task.updated_at,
            ts.TTL: task.expires_at,
            "ttl_ms": task.ttl_ms,
            "round": task.round,
            "attempts": 0,
            "input_responses": task.input_responses,
        }
        caller = trace_context.parse(task.request.traceparent)
        if caller is not None:  # top level: a trace id finds the task without reading its request
            item[ts.TRACE_ID] = caller.trace_id
        if not self.gateway.put_new(self.table_name, to_item(item)):
            raise TaskTransitionRefused(f"task {task.task_id} exists already: task ids are random, so this is a defect")

    def get(self, task_id: str, owner: str | None = None) -> Task:
        """The task (consistent read); TaskNotFound when absent, expired or not ``owner``'s."""
        response = self.gateway.call("get_item", TableName=self.table_name, Key=self._key(task_id), ConsistentRead=True)
        raw = response.get("Item")
        if raw is None:
            raise TaskNotFound(task_id)
        task = _task(task_id, from_item(raw))
        if task.expires_at <= self.clock.now() or (owner is not None and task.owner != owner):
            raise TaskNotFound(task_id)
        return task

    def begin_attempt(self, task_id: str) -> Task:
        """The worker takes the task: ``attempts + 1`` while it is ``working``."""
        return self._transition(task_id, (WORKING,), "SET #attempts = #attempts + :one", {":one": 1}, ["attempts"])

    def await_input(self, task_id: str, requests: dict[str, Any], message: str) -> Task:
        values = {":requests": requests, ":message": message, ":status": INPUT_REQUIRED}
        update = "SET #input_requests = :requests, #status_message = :message, #task_status = :status"
        return self._transition(task_id, (WORKING,), update, values, ["input_requests", "status_message"])

    def deliver_input(self, task: Task, responses: dict[str, Any]) -> Task:
        """tasks/update: record the answers and drop their questions. With questions left the task
        stays ``input_required`` (asking only those); with none, it is ``working`` again for its
        next run. Conditioned on the round read, so two updates racing for one round cannot both
        apply (the loser's answers are ignored, as answers to questions no longer asked are)."""
        merged = {**task.input_responses, **responses}
        remaining = {k: v for k, v in (task.input_requests or {}).items() if k not in responses}
        values: dict[str, Any] = {":responses": merged, ":one": 1, ":round": task.round, ":owner": task.owner}
        names = ["input_responses", "round", "input_requests"]
        if remaining:
            update = "SET #input_responses = :responses, #input_requests = :remaining, #round = #round + :one"
            values[":remaining"] = remaining
        else:
            # The next run is a new round, not a retry: its attempts count from zero again.
            update = "SET #input_responses = :responses, #task_status = :status, #round = #round + :one, "
            update += "#attempts = :zero REMOVE #input_requests, #status_message"
            values.update({":status": WORKING, ":zero": 0})
            names += ["status_message", "attempts"]
        condition = "#round = :round AND #owner = :owner"
        return self._transition(task.task_id, (INPUT_REQUIRED,), update, values, names, condition)

    def note(self, task_id: str, message: str) -> None:
        """Progress or a log line of the running tool, as the task's ``statusMessage`` (clipped)."""
        update = "SET #status_message = :message"
        self._transition(task_id, (WORKING,), update, {":message": status_text(message)}, ["status_message"])

    def finish(
        self, task_id: str, status: str, *, result: Any = None, error: Any = None, message: str | None = None
    ) -> Task:
        """completed (``result``) or failed (``error``, ``message`` its diagnostics), from
        ``working`` only: a task cancelled meanwhile stays cancelled. What the item cannot keep
        is recorded as an error that says so (``budget.recordable_outcome``): this last write
        always fits."""
        status, result, error, message = recordable_outcome(status, result, error, message)
        values: dict[str, Any] = {":status": status}
        update = "SET #task_status = :status"
        names: list[str] = []
        for name, value in (("result", result), ("error", error), ("status_message", message)):
            if value is not None:
                update += f", #{name} = :{name}"
                values[f":{name}"] = value
                names.append(name)
        return self._transition(task_id, (WORKING,), update, values, names)

    def cancel(self, task_id: str, owner: str) -> Task:
        """From any active status to ``cancelled``; TaskTransitionRefused once terminal."""
        values = {":status": "cancelled", ":owner": owner}
        return self._transition(task_id, ACTIVE, "SET #task_status = :status", values, [], "#owner = :owner")

    def _transition(
        self,
        task_id: str,
        allowed: tuple[str, ...],
        update: str,
        values: dict[str, Any],
        names: list[str],
        extra_condition: str = "",
    ) -> Task:
        now = self.clock.now()
        placeholders = {f":from{i}": status for i, status in enumerate(allowed)}
        condition = f"attribute_exists(#pk) AND #ttl > :now AND #task_status IN ({', '.join(placeholders)})"
        if extra_condition:
            condition += f" AND {extra_condition}"
        head, _, tail = update.partition(" REMOVE ")
        expression = f"{head}, #updated_at = :now" + (f" REMOVE {tail}" if tail else "")
        attribute_names = {f"#{name}": _ATTRS.get(name, name) for name in names}
        attribute_names.update(
            {"#pk": ts.PK, "#ttl": ts.TTL, "#task_status": TASK_STATUS, "#updated_at": ts.UPDATED_AT}
        )
        if "#owner" in condition:
            attribute_names["#owner"] = ts.OWNER
        try:
            response = self.gateway.call(
                "update_item",
                TableName=self.table_name,
                Key=self._key(task_id),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=attribute_names,
                ExpressionAttributeValues={k: to_attr(v) for k, v in {**values, **placeholders, ":now": now}.items()},
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            raise TaskTransitionRefused(task_id) from exc
        return _task(task_id, from_item(response["Attributes"]))


def _task(task_id: str, item: dict[str, Any]) -> Task:
    return Task(
        task_id=task_id,
        owner=str(item[ts.OWNER]),
        status=str(item[TASK_STATUS]),
        request=TaskRequest.from_map(item["request"]),
        created_at=float(item[ts.CREATED_AT]),
        updated_at=float(item[ts.UPDATED_AT]),
        expires_at=int(item[ts.TTL]),
        ttl_ms=int(item["ttl_ms"]),
        status_message=item.get("status_message"),
        result=item.get(ts.RESULT),
        error=item.get("error"),
        input_requests=item.get("input_requests"),
        input_responses=dict(item.get("input_responses") or {}),
        round=int(item.get("round", 1)),
        attempts=int(item.get("attempts", 0)),
    )
