"""Ingest domain: Kinesis record → idempotent tool-call record + exact usage counters.

Per event, in this order:

1. the tool-call record (``session#<id>`` / ``tool#<started_at>#<id>``, D1/D4), in one
   TransactWriteItems with a ConditionCheck that the session is alive (its metadata item
   exists, has not expired and was not ended, as for D7/D10). The record's
   ``attribute_not_exists(pk)`` failing means the endpoint's commit (or an earlier delivery)
   already wrote it: success, the record is immutable and never touched. The session check
   failing means the session expired and may already have been cleaned up (A4): the record is
   skipped, because a late or replayed event must not leave an orphan without ttl behind.
   It is a transaction of its own because inside the counting one either failure would
   cancel the counters.
2. one TransactWriteItems: Put dedupe marker ``event#<id>`` / ``dedupe`` with
   ``attribute_not_exists(pk)`` + Update ``usage#<principal>`` / ``<day>#<tool>`` ADD counters.
   The counters move iff the marker is new, so redelivery can never count twice; a cancellation
   whose reason is the marker's ConditionalCheckFailed is a duplicate, hence success. The
   marker outlives the stream's retention, so even a replay from TRIM_HORIZON finds it.

Step 1 before step 2 means "marker exists ⇒ record exists (or its session was gone)": a crash
between them is repaired by the redelivery. Events without a session have no session
partition: only usage is counted.

The stream also carries typed platform events (:mod:`.stream_events`): a ``session.expired``
event (A4) is acknowledged and logged, never counted as a tool call and never a batch item
failure, so an expiry cannot reach the ingest DLQ. Only records that decode to no known event
type are poison (A5).

A batch from one shard (:meth:`EventIngestor.ingest_batch`, what the ingest function runs) is
applied through the shard's checkpoint instead of a transaction per event: the records at or
before it were applied by an earlier delivery (a retry, a bisected half, a partial failure's
redelivery) and are skipped; the others are read in order up to the first that fails (poison,
or a record write that raised), their records written first (step 1, only for events whose
commit did not write it: ``recorded``), then their usage applied as one write per counter with
the checkpoint moved to the last of them (step 2, batched). The first record that failed is the
batch item failure: the mapping retries from it, and nothing after it has been counted, so what
it dead-letters in the end was never counted (the DLQ replay counts it per event, under the
dedupe markers). A recorded event (a committed call) is also counted under its dedupe marker,
since the outbox relay may put it on the stream a second time and checks that marker.

The order and the idempotency rules are decided here; how each write is made exactly once
(the items, the TransactWriteItems and their conditions) is the ledger's
(:class:`~mcp_platform.application.events.ports.IngestLedger`).
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from mcp_platform.application.events.ports import CountingFailed, IngestLedger, RecordWrite
from mcp_platform.application.events.schema import TOOL_CALL_TYPE, EventSchemaError, ToolCallEvent
from mcp_platform.application.events.stream_events import SessionExpiredEvent, StreamEvent, decode_stream_event
from mcp_platform.protocol.clock import SYSTEM_CLOCK, Clock

logger = logging.getLogger(__name__)

# Kinesis keeps a record for the stream's retention (K7: 168 h by default, up to 8760 h); a
# replay from TRIM_HORIZON can redeliver anything still retained, so the dedupe marker must
# outlive it. One more day of margin for processing lag.
DEFAULT_RETENTION_HOURS = 168
DEDUPE_MARGIN_HOURS = 24


def dedupe_ttl_seconds(retention_hours: int) -> int:
    """Lifetime of an ingest dedupe marker for a stream retaining records ``retention_hours``."""
    return (retention_hours + DEDUPE_MARGIN_HOURS) * 3600


DEFAULT_DEDUPE_TTL_S = dedupe_ttl_seconds(DEFAULT_RETENTION_HOURS)


class PoisonRecordError(ValueError):
    """A record that can never be ingested (bad base64, JSON, type or schema): a batch item failure."""


def decode_record(data_b64: str) -> StreamEvent:
    """Lambda delivers Kinesis data base64-encoded; decode and validate, or raise PoisonRecordError."""
    try:
        raw = base64.b64decode(data_b64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise PoisonRecordError(f"data is not base64: {exc}") from exc
    try:
        return decode_stream_event(raw)
    except EventSchemaError as exc:
        raise PoisonRecordError(f"invalid stream event: {exc}") from exc


@dataclass(frozen=True)
class IngestOutcome:
    event_id: str
    record_written: bool  # False: already there, no session, the session is gone, or not a tool call
    counted: bool  # False: duplicate delivery (counters untouched) or not a tool call
    session_gone: bool = False  # the record was skipped: session expired, ended or deleted
    event_type: str = TOOL_CALL_TYPE
    trace_id: str | None = None  # the trace of the request that made the call (for the log line)
    span_id: str | None = None  # that request's span
    tool: str | None = None  # the tool the call ran


@dataclass(frozen=True)
class ShardRecord:
    """One record of a batch: its sequence number and its base64 data, as Lambda delivers it."""

    sequence_number: str
    data_b64: str


@dataclass
class BatchOutcome:
    outcomes: list[IngestOutcome] = field(default_factory=list)
    """One per record handled (skipped ones, at or before the checkpoint, have none)."""
    failed: str | None = None
    """The sequence number of the first record that failed: the batch item failure."""
    error: BaseException | None = None
    """Why it failed."""
    skipped: int = 0
    """Records at or before the checkpoint: applied by an earlier delivery."""


class EventIngestor:
    def __init__(
        self,
        ledger: IngestLedger,
        *,
        dedupe_ttl_s: int = DEFAULT_DEDUPE_TTL_S,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._ledger = ledger
        self._dedupe_ttl_s = dedupe_ttl_s
        self._clock = clock

    def ingest_record(self, data_b64: str) -> IngestOutcome:
        event = decode_record(data_b64)
        if isinstance(event, SessionExpiredEvent):
            return self.acknowledge(event)
        return self.ingest(event)

    def acknowledge(self, event: SessionExpiredEvent) -> IngestOutcome:
        """A4: the expiry's side effects ran in the audit function; ingest has nothing to write.

        Not a tool call, so no record and no usage; the audit table keeps the summary.
        """
        logger.info("%s event %s acknowledged (%d tool calls)", event.event_type, event.event_id, event.tool_calls)
        return IngestOutcome(event.event_id, record_written=False, counted=False, event_type=event.event_type)

    def ingest_batch(self, shard: str, records: Sequence[ShardRecord]) -> BatchOutcome:
        """One shard's batch, in stream order, applied through the shard's checkpoint."""
        out = BatchOutcome()
        checkpoint = self._ledger.checkpoint(shard) if records else None
        applied = int(checkpoint) if checkpoint is not None else -1
        entries: list[tuple[str, ToolCallEvent | None]] = []
        for record in records:
            if int(record.sequence_number) <= applied:
                out.skipped += 1  # applied by an earlier delivery of this record
                continue
            try:
                event = decode_record(record.data_b64)
                if isinstance(event, SessionExpiredEvent):
                    out.outcomes.append(self.acknowledge(event))
                    entries.append((record.sequence_number, None))
                    continue
                gone = self._record(event)
            except Exception as exc:
                out.failed, out.error = record.sequence_number, exc
                break
            entries.append((record.sequence_number, event))
            out.outcomes.append(self._outcome(event, gone, counted=False))
        if entries:
            expires_at = int(self._clock.now()) + self._dedupe_ttl_s
            try:
                counted = self._ledger.apply_usage(shard, entries, expected=checkpoint, marker_expires_at=expires_at)
            except CountingFailed as exc:
                out.failed, out.error = exc.first_unapplied, exc.__cause__ or exc
                counted = set()
            out.outcomes = [
                replace(o, counted=o.event_id in counted) if o.event_type == TOOL_CALL_TYPE else o for o in out.outcomes
            ]
        return out

    def _record(self, event: ToolCallEvent) -> RecordWrite | None:
        """Step 1 for a session's call whose commit did not write the record."""
        if not event.session_id or event.recorded:
            return None
        write = self._ledger.record_tool_call(event, now=self._clock.now())
        if write is RecordWrite.SESSION_GONE:
            logger.info("session of event %s is gone; tool-call record skipped", event.event_id)
        return write

    def _outcome(self, event: ToolCallEvent, write: RecordWrite | None, *, counted: bool) -> IngestOutcome:
        return IngestOutcome(
            event.event_id,
            write is RecordWrite.WRITTEN,
            counted,
            session_gone=write is RecordWrite.SESSION_GONE,
            trace_id=event.trace_id,
            span_id=event.span_id,
            tool=event.tool,
        )

    def ingest(self, event: ToolCallEvent) -> IngestOutcome:
        """One event on its own, deduplicated by its id (the DLQ replay's path): its record, then
        its count under its dedupe marker."""
        # Step 1, then step 2: "counted => recorded (or its session was gone)" holds at any crash.
        write = self._record(event)
        # The marker outlives the stream's retention: a replay from TRIM_HORIZON finds it.
        counted = self._ledger.count_once(event, marker_expires_at=int(self._clock.now()) + self._dedupe_ttl_s)
        return self._outcome(event, write, counted=counted)
