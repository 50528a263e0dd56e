"""The task queue on SQS: the message that hands a task to the worker, and what the worker reads
from one delivery of it (the batch and its partial response are Powertools' BatchProcessor's)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from mcp_platform.application.tasks.ports import TaskMessage

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


class SqsTaskQueue:
    """``TaskQueue`` on the queue at ``queue_url``: one message ``{"taskId": ...}`` per run."""

    def __init__(self, client: SQSClient, queue_url: str) -> None:
        self._client = client
        self._queue_url = queue_url

    def enqueue(self, task_id: str) -> None:
        self._client.send_message(QueueUrl=self._queue_url, MessageBody=json.dumps({"taskId": task_id}))


def task_message(message_id: str, body: str | None) -> TaskMessage:
    """One delivery of a Lambda SQS event; a body without a task id is kept, unread (None)."""
    return TaskMessage(message_id, _task_id(body))


def _task_id(text: str | None) -> str | None:
    try:
        body = json.loads(text or "")
    except (TypeError, ValueError):
        return None
    task_id = body.get("taskId") if isinstance(body, dict) else None
    return task_id if isinstance(task_id, str) and task_id else None
