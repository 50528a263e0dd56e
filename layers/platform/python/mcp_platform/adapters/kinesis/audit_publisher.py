"""Default publisher of "session expired" events: one Kinesis record, else the expiry-events DLQ.

Deliberately tiny and independent of the platform's batching producer: expiry events are rare
(one per expired session), so a single PutRecord is enough. Nothing is dropped silently: a
failed put goes to the DLQ with its error; if that fails too, the exception propagates and the
stream record is retried (the expiry handler is idempotent).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mcp_platform.application.audit.diff import dumps

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient
    from mypy_boto3_sqs import SQSClient

logger = logging.getLogger(__name__)

MAX_RECORD_BYTES = 1_000_000  # Kinesis: data + partition key per record


class KinesisEventPublisher:
    def __init__(
        self, kinesis: KinesisClient, stream_name: str, *, sqs: SQSClient | None = None, dlq_url: str = ""
    ) -> None:
        if not stream_name:
            raise ValueError("event stream name is required")
        if dlq_url and sqs is None:
            raise ValueError("an SQS client is required with a DLQ URL")
        self._kinesis = kinesis
        self._stream = stream_name
        self._sqs = sqs
        self._dlq_url = dlq_url

    def publish(self, event: Mapping[str, Any]) -> None:
        # K3: keyed by session id, a high-cardinality key that keeps one session's events ordered.
        partition_key = str(event["session_id"])
        data = dumps(event).encode("utf-8")
        if len(data) + len(partition_key.encode("utf-8")) > MAX_RECORD_BYTES:
            raise ValueError(f"expiry event of {len(data)} bytes exceeds the Kinesis record limit")
        try:
            self._kinesis.put_record(StreamName=self._stream, Data=data, PartitionKey=partition_key)
        except (ClientError, BotoCoreError) as exc:
            if not self._dlq_url or self._sqs is None:  # the constructor requires both or neither
                raise
            code = exc.response.get("Error", {}).get("Code", "") if isinstance(exc, ClientError) else ""
            logger.warning("expiry event for %s sent to DLQ: %s", partition_key, code or type(exc).__name__)
            body = {"event": event, "error_code": code or type(exc).__name__, "stream": self._stream}
            self._sqs.send_message(QueueUrl=self._dlq_url, MessageBody=dumps(body))
