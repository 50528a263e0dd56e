"""Batching Kinesis producer with partial-failure handling (K1, K2, K3).

Usage on the endpoint: ``add()`` each tool-call event while serving (cheap: serialize, size
check, append), then ``await producer.flush_async()`` after the result has been sent and
before the response stream ends. ``flush`` is a plain blocking method; ``flush_async`` runs it
in a worker thread (``asyncio.to_thread``) so the event loop never waits on Kinesis, except
while the request flushing is the only one in flight (Lambda's pattern, see
:mod:`mcp_platform.blocking`), where the hop would buy nothing.

Delivery is at-least-once: a timed-out call that did land is resent, so consumers dedupe by
event id (the ingest function does). **Per-key ordering can change on retry**: a failed record
is resent after records of the same partition key that succeeded in the first call, so order
events by ``started_at``, never by sequence number.
"""

from __future__ import annotations

import asyncio
import logging
import operator
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from mcp_platform import blocking
from mcp_platform.events.batching import (
    MAX_BYTES_PER_CALL,
    MAX_RECORD_BYTES,
    MAX_RECORDS_PER_CALL,
    Entry,
    new_entry,
    partition_key_for,
    plan_batches,
)
from mcp_platform.events.dead_letters import DeadLetterError, DeadLetterQueue, FailedRecord
from mcp_platform.events.schema import ToolCallEvent

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
_SEQ = operator.attrgetter("seq")
_REQUEST = operator.attrgetter("request")


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
        kinesis_client: Any,
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
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        self._kinesis = kinesis_client
        # StreamARN is preferred by the API when known (cross-account, no name lookup).
        self._target = {"StreamARN": stream_arn} if stream_arn else {"StreamName": stream_name}
        self._dlq = dead_letters
        self._max_attempts = max_attempts
        self._base_delay_s = base_delay_s
        self._sleep = sleep
        self._rng = rng
        self._max_records = max_records_per_call
        self._max_bytes = max_bytes_per_call
        self._max_record_bytes = max_record_bytes
        self._buffer: list[Entry] = []
        self._lock = threading.Lock()
        self._seq = 0
        self._running: asyncio.Future[FlushResult] | None = None  # the worker-thread flush under way
        self._next: asyncio.Future[FlushResult] | None = None  # the one queued behind it

    def __len__(self) -> int:
        return len(self._buffer)

    def add(self, event: ToolCallEvent) -> None:
        """Serialize and buffer; raises RecordTooLargeError now rather than losing it later."""
        self.add_record(event.to_bytes(), partition_key_for(event))

    def add_record(self, data: bytes, partition_key: str) -> None:
        with self._lock:
            record = new_entry(self._seq, data, partition_key, self._max_record_bytes)
            self._seq += 1
            self._buffer.append(record)

    def backoff_delay(self, retry: int) -> float:
        """K2: 100 ms x 2^retry (retry 0 = first resend), 'equal jitter' in [d/2, d]."""
        delay = self._base_delay_s * 2**retry
        return delay / 2 + self._rng() * delay / 2

    def flush(self) -> FlushResult:
        """Send everything buffered; failures end in the DLQ. Raises DeadLetterError if the DLQ
        refuses records. On that or any other exception, every entry neither sent nor
        dead-lettered is put back at the front of the buffer first, so a later flush retries it."""
        with self._lock:
            entries, self._buffer = self._buffer, []
        settled: set[int] = set()  # seqs sent to Kinesis or accepted by the DLQ
        try:
            return self._flush(entries, settled)
        except BaseException:  # cancellation too: the entries outlive the request that flushed
            self._restore([e for e in entries if e.seq not in settled])
            raise

    def _flush(self, entries: list[Entry], settled: set[int]) -> FlushResult:
        result = FlushResult()
        failed: list[FailedRecord] = []
        # One entry is one batch (each entry was checked against the record limit <= max_bytes).
        batches = (entries,) if len(entries) == 1 else plan_batches(entries, self._max_records, self._max_bytes)
        for batch in batches:
            failed.extend(self._send_batch(batch, result, settled))
        if failed:
            for record in failed:
                result.error_codes[record.error_code] = result.error_codes.get(record.error_code, 0) + 1
            logger.warning("dead-lettering %d events: %s", len(failed), result.error_codes)
            # Any exception other than DeadLetterError leaves all of them unsettled: resending
            # may duplicate a DLQ message (events are deduped by id), never lose an event.
            try:
                self._dlq.send(failed)
            except DeadLetterError as exc:
                # The DLQ names what it did not take; the rest is dead-lettered for good.
                unsent = {r.entry.seq for r in exc.unsent}
                settled.update(r.entry.seq for r in failed if r.entry.seq not in unsent)
                raise
            settled.update(r.entry.seq for r in failed)
            result.dead_lettered = len(failed)
        return result

    def _restore(self, entries: list[Entry]) -> None:
        """Put ``entries`` back ahead of anything added meanwhile, in their original order."""
        if entries:
            with self._lock:
                self._buffer[:0] = entries

    async def flush_async(self) -> FlushResult:
        """``flush`` inline while the calling request is the only one in flight (Lambda's
        pattern, :mod:`mcp_platform.blocking`), else in a worker thread shared by concurrent
        callers (group commit): a caller that finds a flush running joins the one flush queued
        behind it, which sends what every waiting caller buffered, so each caller's events are
        sent (or back in the buffer) when it returns. The shutdown flush has no request in
        flight: it hops. A shared flush's result and error are every joined caller's."""
        if blocking.alone():
            return self.flush()
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

    def _send_batch(self, batch: Sequence[Entry], result: FlushResult, settled: set[int]) -> list[FailedRecord]:
        errors: dict[int, tuple[str, str]] = {}
        result.put_calls += 1
        failing, retryable = self._put(batch, errors)
        if not failing:  # the usual outcome: everything landed at the first call
            settled.update(map(_SEQ, batch))
            result.sent += len(batch)
            return []
        return self._resend(batch, failing, retryable, errors, result, settled)

    def _resend(
        self,
        batch: Sequence[Entry],
        pending: Sequence[Entry],
        retryable: bool,
        errors: dict[int, tuple[str, str]],
        result: FlushResult,
        settled: set[int],
    ) -> list[FailedRecord]:
        """K2 after a first call that left ``pending`` unsent: only those are resent, in their
        original order, with backoff, up to ``max_attempts`` calls in all; what still fails is
        returned for the DLQ."""
        failing = {e.seq for e in pending}
        settled.update([e.seq for e in batch if e.seq not in failing])
        attempt = 1
        while pending and retryable and attempt < self._max_attempts:
            result.retried_entries += len(pending)
            self._sleep(self.backoff_delay(attempt - 1))
            attempt += 1
            result.put_calls += 1
            still_failing, retryable = self._put(pending, errors)
            failing = {e.seq for e in still_failing}
            settled.update([e.seq for e in pending if e.seq not in failing])
            pending = still_failing
        result.sent += len(batch) - len(pending)
        return [FailedRecord(e, *errors[e.seq], attempts=attempt) for e in pending]

    def _put(self, entries: Sequence[Entry], errors: dict[int, tuple[str, str]]) -> tuple[Sequence[Entry], bool]:
        """One PutRecords call; returns (entries still failing, whether retrying makes sense)."""
        try:
            response = self._kinesis.put_records(Records=list(map(_REQUEST, entries)), **self._target)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "ClientError")
            message = exc.response.get("Error", {}).get("Message", str(exc))
            for e in entries:
                errors[e.seq] = (code, message)
            return entries, code in RETRYABLE_CALL_ERRORS
        except BotoCoreError as exc:  # connection reset, timeout: the call may or may not have landed
            for e in entries:
                errors[e.seq] = (type(exc).__name__, str(exc))
            return entries, True
        results = response.get("Records", [])
        if len(results) != len(entries):
            # Cannot map results to entries: resend all (duplicates are deduped downstream).
            for e in entries:
                errors[e.seq] = ("MalformedResponse", f"{len(results)} results for {len(entries)} records")
            return entries, True
        # Per-record ErrorCode is authoritative; FailedRecordCount only cross-checks it. A result
        # without a SequenceNumber is treated as failed too: never assume success.
        still_failing: list[Entry] = []
        for entry, res in zip(entries, results, strict=False):  # lengths checked above
            if res.get("ErrorCode") or not res.get("SequenceNumber"):
                errors[entry.seq] = (res.get("ErrorCode") or "MissingSequenceNumber", res.get("ErrorMessage", ""))
                still_failing.append(entry)
        declared = response.get("FailedRecordCount", 0)
        if declared != len(still_failing):
            logger.warning("FailedRecordCount=%s but %d records failed", declared, len(still_failing))
        return still_failing, True
