"""The local SQS mapping of the task worker: delete what succeeded, keep what failed for its
redelivery (ReportBatchItemFailures), keep everything when the handler raised."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local.queue_poller import QueuePoller


@pytest.fixture
def sqs(aws_env: None) -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("sqs", region_name="us-east-1")


def poller(sqs: Any, handler: Any) -> tuple[QueuePoller, str]:
    url = sqs.create_queue(QueueName="tasks", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return QueuePoller("w", sqs, url, arn, handler, batch_size=10, region="us-east-1", stop=threading.Event()), url


def bodies_left(sqs: Any, url: str) -> list[str]:
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    return sorted(m["Body"] for m in messages)


def test_reported_failures_stay_and_the_rest_is_deleted(sqs: Any) -> None:
    seen: list[dict[str, Any]] = []

    def handler(event: dict[str, Any]) -> dict[str, Any]:
        seen.extend(event["Records"])
        failed = [r["messageId"] for r in event["Records"] if r["body"] == "bad"]
        return {"batchItemFailures": [{"itemIdentifier": m} for m in failed]}

    mapping, url = poller(sqs, handler)
    for body in ("good", "bad"):
        sqs.send_message(QueueUrl=url, MessageBody=body)
    assert mapping.poll_once() == 2
    assert {r["eventSource"] for r in seen} == {"aws:sqs"} and all(r["receiptHandle"] for r in seen)
    assert bodies_left(sqs, url) == ["bad"]


def test_a_handler_that_raises_deletes_nothing(sqs: Any) -> None:
    def handler(event: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("crash")

    mapping, url = poller(sqs, handler)
    sqs.send_message(QueueUrl=url, MessageBody="x")
    assert mapping.poll_once() == 1
    assert bodies_left(sqs, url) == ["x"]


def test_a_poller_never_started_is_joined_at_once_and_a_started_one_stops(sqs: Any) -> None:
    """Given a start-up that failed after its pollers were built and before they were started,
    When the platform shuts down (``Running.shutdown`` joins every worker), Then joining one never
    started returns at once instead of raising over the start-up's own error; a started one stops
    on the stop event and is joined."""
    stop = threading.Event()
    url = sqs.create_queue(QueueName="tasks")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    never_started = QueuePoller("w", sqs, url, arn, lambda event: {}, batch_size=10, region="us-east-1", stop=stop)
    never_started.join(timeout=0.1)
    started = QueuePoller("w2", sqs, url, arn, lambda event: {}, batch_size=10, region="us-east-1", stop=stop)
    started.start()
    stop.set()
    started.join(timeout=30)
    assert not started.is_alive() and not never_started.is_alive()
