"""What the tasks extension needs of storage and of the queue: the task items (every
transition conditional, so DynamoDB decides each race between the endpoint and the worker) and
the hand-over of a task to the worker. Implemented by ``adapters.dynamodb.tasks.TaskStore``
and an SQS client (``send_message``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from mcp_platform.protocol.tasks import Task, TaskRequest


class TaskNotFound(LookupError):
    """No such task for this caller (unknown, expired, or another principal's)."""


class TaskTransitionRefused(RuntimeError):
    """The task was not in a status this transition may leave (someone else moved it first)."""


class TaskRepository(Protocol):
    """Task items. A transition raises :class:`TaskTransitionRefused` when the task is not in a
    status it may leave; a read raises :class:`TaskNotFound` for an absent, expired or foreign task."""

    def new_task(self, task_id: str, owner: str, request: TaskRequest, ttl_seconds: int) -> Task: ...

    def create(self, task: Task) -> None: ...

    def get(self, task_id: str, owner: str | None = None) -> Task: ...

    def begin_attempt(self, task_id: str) -> Task: ...

    def await_input(self, task_id: str, requests: dict[str, Any], message: str) -> Task: ...

    def deliver_input(self, task: Task, responses: dict[str, Any]) -> Task: ...

    def note(self, task_id: str, message: str) -> None: ...

    def finish(
        self, task_id: str, status: str, *, result: Any = None, error: Any = None, message: str | None = None
    ) -> Task: ...

    def cancel(self, task_id: str, owner: str) -> Task: ...


class TaskQueue(Protocol):
    """Where a task's run is handed to the worker (the SQS task queue)."""

    def enqueue(self, task_id: str) -> None:
        """One message that runs ``task_id`` in the worker; raises when it could not be queued."""
        ...


@dataclass(frozen=True)
class TaskMessage:
    """One delivery of the task queue to the worker: ``task_id`` None when the message could not
    be read (it fails, and after its receives ends in the queue's DLQ)."""

    message_id: str
    task_id: str | None
