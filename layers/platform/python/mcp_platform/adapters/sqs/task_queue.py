"""The task queue on SQS: the message that hands a task to the worker, and the worker's side of
a Lambda SQS batch (its messages in, its partial batch response out)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

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


def task_messages(event: dict[str, Any]) -> list[TaskMessage]:
    """The deliveries of a Lambda SQS event; a body without a task id is kept, unread (None)."""
    return [TaskMessage(str(record.get("messageId", "")), _task_id(record)) for record in event.get("Records", [])]


def batch_response(failed_message_ids: Iterable[str]) -> dict[str, Any]:
    """Lambda's partial batch response (ReportBatchItemFailures): these messages come back."""
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed_message_ids]}


def _task_id(record: dict[str, Any]) -> str | None:
    try:
        body = json.loads(record.get("body", ""))
    except (TypeError, ValueError):
        return None
    task_id = body.get("taskId") if isinstance(body, dict) else None
    return task_id if isinstance(task_id, str) and task_id else None
