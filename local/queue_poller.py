"""Local SQS event source mapping (the task worker's queue), as Lambda polls a queue.

Per batch: ReceiveMessage, one invocation with the SQS event, then DeleteMessage
for every record the handler did not report in ``batchItemFailures``; a handler that raises
deletes nothing. What is not deleted becomes visible again after the queue's visibility
timeout and is received again; after the queue's ``maxReceiveCount`` the emulator's redrive
moves it to the dead-letter queue (the same rules as in AWS). Several pollers on one queue
stand for Lambda's concurrent environments: each has its own handler (its own warm state).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from local.worker import BackgroundWorker

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import DeleteMessageBatchRequestEntryTypeDef, MessageTypeDef

logger = logging.getLogger(__name__)
# Short polls: the emulator serves one request at a time, so a long poll would hold every other
# AWS call of the platform behind it. An idle poller asks 4 times a second.
IDLE_INTERVAL_S = 0.25
ERROR_BACKOFF_S = 2.0
Invoke = Callable[[dict[str, Any]], Any]


def sqs_event_record(message: MessageTypeDef, queue_arn: str, region: str) -> dict[str, Any]:
    """One record of a Lambda SQS event, from a ReceiveMessage message."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": dict(message.get("MessageAttributes", {})),
        "md5OfBody": message.get("MD5OfBody") or hashlib.md5(message["Body"].encode()).hexdigest(),  # noqa: S324
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


class QueuePoller(BackgroundWorker):
    def __init__(
        self,
        name: str,
        sqs: SQSClient,
        queue_url: str,
        queue_arn: str,
        invoke: Invoke,
        *,
        batch_size: int,
        region: str,
        stop: threading.Event,
    ) -> None:
        self.name = name
        self._sqs, self._queue_url, self._queue_arn = sqs, queue_url, queue_arn
        self._invoke = invoke
        self._batch_size = min(10, batch_size)
        self._region = region
        self._stop = stop
        super().__init__(f"poller-{name}")

    def poll_once(self) -> int:
        """One receive and its invocation; returns how many messages were received."""
        received = self._sqs.receive_message(
            QueueUrl=self._queue_url,
            MaxNumberOfMessages=self._batch_size,
            WaitTimeSeconds=0,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not received:
            return 0
        records = [sqs_event_record(message, self._queue_arn, self._region) for message in received]
        try:
            response = self._invoke({"Records": records})
        except Exception:
            logger.warning("%s raised on a batch of %d; the messages return after their visibility timeout",
                           self.name, len(records), exc_info=True)  # fmt: skip
            return len(records)
        failed = {f.get("itemIdentifier") for f in (response or {}).get("batchItemFailures", []) if isinstance(f, dict)}
        done = [r for r in records if r["messageId"] not in failed]
        if done:
            entries: list[DeleteMessageBatchRequestEntryTypeDef] = [
                {"Id": str(i), "ReceiptHandle": r["receiptHandle"]} for i, r in enumerate(done)
            ]
            self._sqs.delete_message_batch(QueueUrl=self._queue_url, Entries=entries)
        return len(records)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.poll_once():
                    self._stop.wait(IDLE_INTERVAL_S)
            except Exception:
                if self._stop.is_set():
                    break
                logger.exception("queue poller %s failed; retrying", self.name)
                self._stop.wait(ERROR_BACKOFF_S)
