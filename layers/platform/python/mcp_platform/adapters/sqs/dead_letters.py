"""Producer dead-letter queue: records Kinesis would not take after every retry (K2).

Each message body is the record's data as text (events are UTF-8 JSON; anything else is sent
base64 with ``DataEncoding=base64``), so a redrive can put it back on the stream verbatim. The
Kinesis error code and message travel as message attributes. A failed DLQ send raises
:class:`DeadLetterError` carrying the unsent records: this is the last stop, nothing is dropped.
"""

from __future__ import annotations

import base64
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_platform.adapters.kinesis.batching import Record
from mcp_platform.adapters.request_batches import bounded_runs

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef, SendMessageBatchRequestEntryTypeDef

SQS_MAX_BATCH = 10
# The classic 256 KiB quota is used even where SQS now accepts more, so the queue works
# whichever limit the account has.
SQS_MAX_BATCH_BYTES = 256 * 1024
_ERROR_MESSAGE_CHARS = 512


@dataclass(frozen=True)
class FailedRecord:
    record: Record
    """The record as the producer buffered it (restored as it is if the DLQ refuses it)."""
    error_code: str
    error_message: str
    attempts: int

    @property
    def data(self) -> bytes:
        return self.record.data

    @property
    def partition_key(self) -> str:
        return self.record.partition_key


class DeadLetterError(RuntimeError):
    """The DLQ refused records; they are attached so the caller can keep or log them."""

    def __init__(self, message: str, unsent: Sequence[FailedRecord]) -> None:
        super().__init__(message)
        self.unsent = list(unsent)


def _message(record: FailedRecord, stream: str) -> tuple[str, dict[str, MessageAttributeValueTypeDef]]:
    try:
        body, encoding = record.data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        body, encoding = base64.b64encode(record.data).decode("ascii"), "base64"
    attributes: dict[str, MessageAttributeValueTypeDef] = {
        "ErrorCode": {"DataType": "String", "StringValue": record.error_code or "Unknown"},
        "ErrorMessage": {
            "DataType": "String",
            "StringValue": (record.error_message or "-")[:_ERROR_MESSAGE_CHARS],
        },
        "PartitionKey": {"DataType": "String", "StringValue": record.partition_key},
        "Attempts": {"DataType": "Number", "StringValue": str(record.attempts)},
        "DataEncoding": {"DataType": "String", "StringValue": encoding},
        "Stream": {"DataType": "String", "StringValue": stream or "-"},
    }
    return body, attributes


def _size(body: str, attributes: dict[str, MessageAttributeValueTypeDef]) -> int:
    size = len(body.encode("utf-8"))
    for name, value in attributes.items():
        size += len(name) + len(value["DataType"]) + len(value["StringValue"].encode("utf-8"))
    return size


class DeadLetterQueue:
    """Sends failed records with SendMessageBatch (≤10 messages and ≤256 KiB per call)."""

    def __init__(
        self,
        sqs_client: SQSClient,
        queue_url: str,
        *,
        stream_name: str = "",
        max_attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not queue_url:
            raise ValueError("a producer DLQ URL is required: failed events must have somewhere to go")
        self._sqs = sqs_client
        self._url = queue_url
        self._stream = stream_name
        self._max_attempts = max_attempts
        self._sleep = sleep
        self.calls = 0
        self._last_exception: Exception | None = None

    def send(self, records: Sequence[FailedRecord]) -> None:
        unsent: list[FailedRecord] = []
        self._last_exception = None
        for chunk in self._chunks(records):
            unsent.extend(self._send_chunk(chunk))
        if unsent:
            codes = sorted({r.error_code for r in unsent})
            message = f"{len(unsent)} records could not be dead-lettered ({codes})"
            raise DeadLetterError(message, unsent) from self._last_exception

    def _chunks(self, records: Sequence[FailedRecord]) -> list[list[FailedRecord]]:
        return bounded_runs(
            records,
            size=lambda record: _size(*_message(record, self._stream)),
            max_items=SQS_MAX_BATCH,
            max_bytes=SQS_MAX_BATCH_BYTES,
        )

    def _send_chunk(self, chunk: list[FailedRecord]) -> list[FailedRecord]:
        """Returns what is still unsent after the bounded retries (only failed ids are resent)."""
        pending = dict(enumerate(chunk))
        last_error = ""
        for attempt in range(self._max_attempts):
            if attempt:
                self._sleep(0.1 * 2 ** (attempt - 1) * (0.5 + random.random() / 2))
            entries: list[SendMessageBatchRequestEntryTypeDef] = []
            for idx, record in pending.items():
                body, attributes = _message(record, self._stream)
                entries.append({"Id": str(idx), "MessageBody": body, "MessageAttributes": attributes})
            self.calls += 1
            try:
                response = self._sqs.send_message_batch(QueueUrl=self._url, Entries=entries)
            except Exception as exc:  # any failure here: retry, then raise with the records
                self._last_exception = exc
                last_error = f"{type(exc).__name__}: {exc}"
                continue
            failed_ids = {int(f["Id"]) for f in response.get("Failed", [])}
            pending = {idx: rec for idx, rec in pending.items() if idx in failed_ids}
            if not pending:
                return []
            last_error = "; ".join(f"{f.get('Code')}: {f.get('Message', '')}" for f in response["Failed"])
        if pending and last_error:
            # The caller raises DeadLetterError; keep the cause visible on each record.
            return [
                FailedRecord(r.record, r.error_code, f"{r.error_message} | DLQ: {last_error}", r.attempts)
                for r in pending.values()
            ]
        return list(pending.values())
