"""One change to an item of the session table, as the audit needs it (A2-A4).

Built by the adapter that reads the stream's records
(:func:`mcp_platform.adapters.dynamodb.stream_images.read_stream_change`): it knows the record
shape, the table's key layout and who DynamoDB's TTL process is; the use case gets the answers.
Images stay in the stream's wire form (:data:`~.ports.WireImage`): the diff compares them without
converting and the audit log stores them verbatim, so only the values that end up in the diff
are ever decoded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mcp_platform.application.audit.images import WireImage
from mcp_platform.protocol.clock import iso_utc

EVENT_NAMES = ("INSERT", "MODIFY", "REMOVE")


class MalformedStreamRecord(ValueError):
    """The record lacks a field every DynamoDB Streams record carries; it cannot be audited."""


@dataclass(frozen=True, slots=True)
class ExpiredSession:
    """What a session's metadata said when TTL removed it: the facts of its summary (A4)."""

    created_at: object  # as stored: epoch seconds or ISO 8601 text (None: absent)
    expires_at: object  # the ttl, epoch seconds
    updated_at: object
    owner: str | None
    kind: str
    version: int | None


@dataclass(frozen=True, slots=True)
class StreamChange:
    event_id: str
    event_name: str  # INSERT | MODIFY | REMOVE
    sequence_number: str
    change_epoch: float  # ApproximateCreationDateTime, epoch seconds
    pk: str  # the changed item's key, as stored (the audit record names it)
    sk: str
    old_image: WireImage | None
    new_image: WireImage | None
    session_id: str | None  # None for non-session items (never audited)
    is_ttl_removal: bool  # a REMOVE by DynamoDB's TTL process, not an explicit delete (A4)
    who: Mapping[str, str]  # who made the change
    expired: ExpiredSession | None = None  # set when TTL removed the session's metadata
    trace_id: str | None = None
    """The trace of the request that made this change, when the change says so: the write set
    the item's trace attributes (``protocol.trace_context``). None for a change made outside a
    traced request (a TTL removal, a ttl slide, an end)."""
    span_id: str | None = None
    committed_event: bytes | None = None
    """The tool-call event a commit stored with its record (K10), on that record's INSERT: the
    relay (:mod:`mcp_platform.application.events.relay`) emits it unless ingest counted it."""

    @property
    def change_time_iso(self) -> str:
        # Fixed width (always milliseconds, always Z) so the audit sort key orders correctly.
        return iso_utc(self.change_epoch, "milliseconds")

    @property
    def is_session_expiry(self) -> bool:
        """TTL removed the session's metadata item: the session itself expired."""
        return self.expired is not None
