"""Per-record audit logic: what the audit function does with each stream record (A2-A5).

Non-session items (API keys, usage counters, ingest dedupe markers) are skipped. Every session
change gets one audit record; a TTL removal of session metadata then runs the expiry side
effects. Any exception propagates so the caller reports this record, and only this record, as
a batch item failure (A5); redelivery is safe because every step is idempotent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from mcp_platform.application.audit.diff import diff_images
from mcp_platform.application.audit.expiry import ExpiryOutcome, SessionExpiryHandler
from mcp_platform.application.audit.images import ImageCodec
from mcp_platform.application.audit.ports import AuditLog
from mcp_platform.application.audit.records import StreamChange
from mcp_platform.application.audit.trail import InvalidCursor, TrailPage
from mcp_platform.application.events.relay import CommittedEventRelay

__all__ = ["AuditProcessor", "InvalidCursor", "RecordOutcome", "TrailPage"]

StreamRecordReader = Callable[[Mapping[str, Any]], StreamChange]
"""One stream record -> the change it describes; MalformedStreamRecord when it is none."""

SKIPPED = "skipped"
AUDITED = "audited"
DUPLICATE = "duplicate"


@dataclass(frozen=True, slots=True)
class RecordOutcome:
    sequence_number: str
    action: str  # skipped | audited | duplicate
    expiry: ExpiryOutcome | None = None
    trace_id: str | None = None  # the trace of the request whose write this record is, when it set one
    span_id: str | None = None  # that request's span


class AuditProcessor:
    def __init__(
        self,
        read: StreamRecordReader,
        codec: ImageCodec,
        writer: AuditLog,
        expiry: SessionExpiryHandler,
        relay: CommittedEventRelay | None = None,
    ) -> None:
        """``relay``: emits the committed events ingest has not counted (K10)."""
        self._read = read
        self._codec = codec
        self._writer = writer
        self._expiry = expiry
        self._relay = relay

    def process(self, record: Mapping[str, Any]) -> RecordOutcome:
        change = self._read(record)
        if change.session_id is None:
            return RecordOutcome(change.sequence_number, SKIPPED)
        # The diff is computed only if the log must store it (it is recomputed on read otherwise).
        written = self._writer.record(
            change, partial(diff_images, change.old_image, change.new_image, codec=self._codec)
        )
        # Side effects run on duplicates too: a previous delivery may have audited the record
        # and then failed half-way through them.
        expiry = self._expiry.handle(change) if change.is_session_expiry else None
        if self._relay is not None:
            self._relay.relay(change)  # on duplicates too, for the same reason
        return RecordOutcome(
            change.sequence_number,
            AUDITED if written else DUPLICATE,
            expiry,
            trace_id=change.trace_id,
            span_id=change.span_id,
        )
