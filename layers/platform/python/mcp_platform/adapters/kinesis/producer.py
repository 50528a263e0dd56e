"""Batching Kinesis producer with partial-failure handling (K1, K2, K3).

Usage on the endpoint: ``add()`` each tool-call event while serving (cheap: serialize, size
check, append), then ``await producer.flush_async()`` after the result has been sent and
before the response stream ends. ``flush`` is a plain blocking method; ``flush_async`` runs it
in a worker thread (``asyncio.to_thread``) so the event loop never waits on Kinesis, and the
shutdown flush stays bounded by the loop's timer.

Delivery is at-least-once: a timed-out call that did land is resent, so consumers dedupe by
event id (the ingest function does). **Per-key ordering can change on retry**: a failed record
is resent after records of the same partition key that succeeded in the first call, so order
events by ``started_at``, never by sequence number.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from mcp_platform.adapters.kinesis.batching import (
    MAX_BYTES_PER_CALL,
    MAX_RECORD_BYTES,
    MAX_RECORDS_PER_CALL,
    Record,
    new_record,
    partition_key_for,
    plan_batches,
)
from mcp_platform.adapters.sqs.dead_letters import DeadLetterError, DeadLetterQueue, FailedRecord
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.application.metrics import ERROR_TYPE, EVENTS_DEAD_LETTERED, MetricsWriter

if TYPE_CHECKING:
    from mypy_boto3_kinesis import KinesisClient

logger = logging.getLogger(__name__)

BASE_DELAY_S = 0.1
# Whole-call errors worth retrying; anything else (validation, access, missing stream) goes
# straight to the DLQ because resending the same request cannot succeed.
RETRYABLE_CALL_ERRORS = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "LimitExceededException",
        "InternalFailure",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "ThrottlingException",
        "KMSThrottlingException",
        "RequestTimeout",
    }
)
# What one PutRecords call left unaccepted: each record with its error code and message.
Failures = list[tuple[Record, str, str]]


@dataclass(slots=True)
class FlushResult:
    sent: int = 0
    dead_lettered: int = 0
    put_calls: int = 0
    retried_entries: int = 0
    error_codes: dict[str, int] = field(default_factory=dict)


class EventProducer:
    """Buffers records and writes them with PutRecords; thread-safe ``add``/``flush``."""

    def __init__(
        self,
        kinesis_client: KinesisClient,
        stream_name: str,
        dead_letters: DeadLetterQueue,
        *,
        stream_arn: str = "",
        max_attempts: int = 3,
        base_delay_s: float = BASE_DELAY_S,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
        max_records_per_call: int = MAX_RECORDS_PER_CALL,
        max_bytes_per_call: int = MAX_BYTES_PER_CALL,
        max_record_bytes: int = MAX_RECORD_BYTES,
        metrics: MetricsWriter | None = None,
    ) -> None:
        """``metrics`` counts the records each flush dead-letters (one EMF line per flush that did)."""
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        self._kinesis = kinesis_client
        # StreamARN is preferred by the API when known (cross-account, no name lookup).
        self._stream_arn = stream_arn
        self._stream_name = stream_name
        self._dlq = dead_letters
        self._max_attempts = max_attempts
        self._base_delay_s = base_delay_s
        self._sleep = sleep
        self._rng = rng
        self._max_records = max_records_per_call
        self._max_bytes = max_bytes_per_call
        self._max_record_bytes = max_record_bytes
        self._metrics = metrics
        # Up to this many records fit one call whatever their sizes (each is within the record
        # limit): a flush of so few needs no batch plan. One, with the default quotas, is five.
        self._unplanned = min(max_records_per_call, max_bytes_per_call // max_record_bytes)
        self._buffer: list[Record] = []
        self._lock = threading.Lock()
        self._running: asyncio.Future[FlushResult] | None = None  # the worker-thread flush under way
        self._next: asyncio.Future[FlushResult] | None = None  # the one queued behind it

    def __len__(self) -> int:
        return len(self._buffer)

    def emit(self, event: ToolCallEvent) -> None:
        """Serialize and buffer (``EventSink``); raises RecordTooLargeError now rather than losing
        it later. Its partition key is its session's, else its own id (K3)."""
        self.add_record(event.to_bytes(), partition_key_for(event))

    def add_record(self, data: bytes, partition_key: str) -> None:
        record = new_record(data, partition_key, self._max_record_bytes)
        with self._lock:
            self._buffer.append(record)

    def backoff_delay(self, retry: int) -> float:
        """K2: 100 ms x 2^retry (retry 0 = first resend), 'equal jitter' in [d/2, d]."""
        delay = self._base_delay_s * 2**retry
        return delay / 2 + self._rng() * delay / 2

    def flush(self) -> FlushResult:
        """Send everything buffered; failures end in the DLQ. Raises DeadLetterError if the DLQ
        refuses records. On that or any other exception, every record neither sent nor
        dead-lettered is put back at the front of the buffer first, so a later flush retries it.

        K2 per batch: only the records a call left unaccepted are resent, in their original
        order, with backoff, up to ``max_attempts`` calls in all; what still fails goes to the DLQ.
        """
        with self._lock:
            records, self._buffer = self._buffer, []
        if len(records) <= self._unplanned:
            batches = [records] if records else []
        else:
            batches = plan_batches(records, self._max_records, self._max_bytes)
        result = FlushResult()
        # What an exception would leave unsettled, in buffer order: ``failed`` (refused by
        # Kinesis, not yet taken by the DLQ), then ``pending`` (of the batch being sent, not
        # accepted yet), then the batches from ``unsent_from`` on. Nothing is tracked per record
        # while calls succeed.
        failed: list[FailedRecord] = []
        pending: Sequence[Record] = ()
        unsent_from = 0
        try:
            for batch in batches:
                pending, unsent_from = batch, unsent_from + 1
                attempt = 1
                while True:
                    result.put_calls += 1
                    failures, retryable = self._put(pending)
                    result.sent += len(pending) - len(failures)
                    if not failures:
                        break
                    if not retryable or attempt >= self._max_attempts:
                        failed += [FailedRecord(r, code, message, attempt) for r, code, message in failures]
                        break
                    pending = [failure[0] for failure in failures]
                    result.retried_entries += len(pending)
                    self._sleep(self.backoff_delay(attempt - 1))
                    attempt += 1
                pending = ()
            if failed:
                try:
                    self._dead_letter(failed, result)
                except DeadLetterError as exc:
                    failed = exc.unsent  # the DLQ names what it did not take; the rest is dead-lettered
                    raise
        except BaseException:  # cancellation too: the records outlive the request that flushed
            later = [record for batch in batches[unsent_from:] for record in batch]
            self._restore([f.record for f in failed] + list(pending) + later)
            raise
        return result

    def _dead_letter(self, failed: list[FailedRecord], result: FlushResult) -> None:
        for record in failed:
            result.error_codes[record.error_code] = result.error_codes.get(record.error_code, 0) + 1
        logger.warning("dead-lettering %d events: %s", len(failed), result.error_codes)
        # Any error but DeadLetterError leaves them all unsettled: resending may duplicate a DLQ
        # message (events are deduped by id), never lose an event.
        try:
            self._dlq.send(failed)
        except DeadLetterError as exc:
            self._count_dead_lettered(len(failed) - len(exc.unsent), result.error_codes)  # the ones it took
            raise
        result.dead_lettered = len(failed)
        self._count_dead_lettered(len(failed), result.error_codes)

    def _count_dead_lettered(self, records: int, error_codes: dict[str, int]) -> None:
        if self._metrics is not None and records > 0:
            self._metrics.count(EVENTS_DEAD_LETTERED, records, properties={ERROR_TYPE: ",".join(sorted(error_codes))})

    def _restore(self, records: list[Record]) -> None:
        """Put ``records`` back ahead of anything added meanwhile, in their original order."""
        if records:
            with self._lock:
                self._buffer[:0] = records

    async def flush_async(self) -> FlushResult:
        """``flush`` in a worker thread shared by concurrent callers (group commit): a caller that
        finds a flush running joins the one flush queued behind it, which sends what every
        waiting caller buffered, so each caller's events are sent (or back in the buffer) when it
        returns. A shared flush's result and error are every joined caller's. Always a thread,
        whatever the blocking strategy: the shutdown flush must stay bounded by the loop's timer."""
        loop = asyncio.get_running_loop()
        running = self._running
        if running is not None and (running.done() or running.get_loop() is not loop):
            running = self._running = None  # finished, or left behind by a closed loop
        flight: asyncio.Future[FlushResult]
        if running is None:
            flight = self._running = asyncio.ensure_future(self._flight(None))
        else:
            queued = self._next
            if queued is None or queued.done() or queued.get_loop() is not loop:
                queued = self._next = asyncio.ensure_future(self._flight(running))
            flight = queued
        return await asyncio.shield(flight)  # a cancelled caller leaves the shared flush running

    async def _flight(self, previous: asyncio.Future[FlushResult] | None) -> FlushResult:
        if previous is not None:
            await asyncio.wait({previous})  # its outcome belongs to its own callers
        me = asyncio.current_task()
        if self._next is me:
            self._next = None  # callers arriving from now on queue behind this flight
        self._running = me
        try:
            return await asyncio.to_thread(self.flush)
        finally:
            if self._running is me:
                self._running = None

    def _put(self, records: Sequence[Record]) -> tuple[Failures, bool]:
        """One PutRecords call; returns (the records left unaccepted, whether retrying makes sense)."""
        try:
            if self._stream_arn:
                response = self._kinesis.put_records(Records=[r.entry() for r in records], StreamARN=self._stream_arn)
            else:
                response = self._kinesis.put_records(Records=[r.entry() for r in records], StreamName=self._stream_name)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "ClientError")
            message = exc.response.get("Error", {}).get("Message", str(exc))
            return [(r, code, message) for r in records], code in RETRYABLE_CALL_ERRORS
        except BotoCoreError as exc:  # connection reset, timeout: the call may or may not have landed
            return [(r, type(exc).__name__, str(exc)) for r in records], True
        results = response.get("Records", [])
        if len(results) != len(records):
            # Cannot map results to records: resend all (duplicates are deduped downstream).
            message = f"{len(results)} results for {len(records)} records"
            return [(r, "MalformedResponse", message) for r in records], True
        # Per-record ErrorCode is authoritative; FailedRecordCount only cross-checks it. A result
        # without a SequenceNumber is treated as failed too: never assume success.
        failures: Failures = []
        for record, res in zip(records, results, strict=False):  # lengths checked above
            if res.get("ErrorCode") or not res.get("SequenceNumber"):
                failures.append((record, res.get("ErrorCode") or "MissingSequenceNumber", res.get("ErrorMessage", "")))
        declared = response.get("FailedRecordCount", 0)
        if declared != len(failures):
            logger.warning("FailedRecordCount=%s but %d records failed", declared, len(failures))
        return failures, True
