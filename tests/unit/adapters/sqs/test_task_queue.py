"""The task queue's wire on SQS: one message per run, the worker's deliveries read from a Lambda
SQS event (an unreadable body kept, so it fails and ends in the DLQ), the partial batch response."""

from __future__ import annotations

import json
from typing import Any

from mcp_platform.adapters.sqs.task_queue import SqsTaskQueue, batch_response, task_messages
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
    event = {
        "Records": [
            {"messageId": "m1", "body": json.dumps({"taskId": "t-1"})},
            {"messageId": "m2", "body": "not json"},
            {"messageId": "m3", "body": json.dumps({"taskId": ""})},
            {"messageId": "m4", "body": json.dumps(["t-1"])},
        ]
    }
    assert task_messages(event) == [
        TaskMessage("m1", "t-1"),
        TaskMessage("m2", None),
        TaskMessage("m3", None),
        TaskMessage("m4", None),
    ]
    assert batch_response(["m2", "m3"]) == {"batchItemFailures": [{"itemIdentifier": "m2"}, {"itemIdentifier": "m3"}]}
    assert batch_response([]) == {"batchItemFailures": []}
