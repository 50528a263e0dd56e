"""The task queue's wire on SQS: one message per run, and the worker's delivery read from a Lambda
SQS record's body (an unreadable body kept, so it fails and ends in the DLQ)."""

from __future__ import annotations

import json
from typing import Any

from mcp_platform.adapters.sqs.task_queue import SqsTaskQueue, task_message
from mcp_platform.application.tasks.ports import TaskMessage


class Sent:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def send_message(self, **params: Any) -> None:
        self.messages.append(params)


def test_a_task_is_one_message_naming_it() -> None:
    sent = Sent()
    SqsTaskQueue(sent, "https://sqs/tasks").enqueue("t-1")
    assert sent.messages == [{"QueueUrl": "https://sqs/tasks", "MessageBody": json.dumps({"taskId": "t-1"})}]


def test_deliveries_are_read_and_unreadable_ones_kept_without_a_task() -> None:
    # Given the bodies of four deliveries, one naming a task
    bodies = {"m1": json.dumps({"taskId": "t-1"}), "m2": "not json", "m3": json.dumps({"taskId": ""}), "m4": None}
    # When each is read
    read = [task_message(message_id, body) for message_id, body in bodies.items()]
    # Then only the first names its task; the others are kept, without one
    assert read == [TaskMessage("m1", "t-1"), TaskMessage("m2", None), TaskMessage("m3", None), TaskMessage("m4", None)]
    assert task_message("m5", json.dumps(["t-1"])) == TaskMessage("m5", None)
