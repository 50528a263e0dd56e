"""PutRecords request sizing (K1) and partition-key choice (K3): pure functions, no I/O."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_platform.adapters.request_batches import bounded_runs
from mcp_platform.application.events.schema import ToolCallEvent

if TYPE_CHECKING:
    from mypy_boto3_kinesis.type_defs import PutRecordsRequestEntryTypeDef

# Kinesis service quotas (K1). A record counts as data + partition key (UTF-8 bytes).
MAX_RECORDS_PER_CALL = 500
MAX_BYTES_PER_CALL = 5 * 1024 * 1024
MAX_RECORD_BYTES = 1024 * 1024
MAX_PARTITION_KEY_CHARS = 256


class RecordTooLargeError(ValueError):
    """A record exceeds the per-record limit; it is refused whole, never truncated (K1)."""

    def __init__(self, size: int, limit: int, partition_key: str) -> None:
        super().__init__(f"record of {size} bytes (data + partition key) exceeds the {limit}-byte limit")
        self.size = size
        self.limit = limit
        self.partition_key = partition_key


class InvalidPartitionKeyError(ValueError):
    """Partition key empty or longer than 256 characters."""


@dataclass(frozen=True)
class Record:
    """One buffered record: its bytes and partition key, checked against K1 when it is made
    (:func:`new_record`) and sent as it is (a record may be sent more than once)."""

    data: bytes
    partition_key: str

    def entry(self) -> PutRecordsRequestEntryTypeDef:
        """The record as PutRecords takes it."""
        return {"Data": self.data, "PartitionKey": self.partition_key}


def new_record(data: bytes, partition_key: str, max_record_bytes: int = MAX_RECORD_BYTES) -> Record:
    """A record checked against K1 as it is made: a partition key of 1-256 characters that
    UTF-8 can encode, data and key within the per-record limit (refused whole, never truncated)."""
    if not 0 < len(partition_key) <= MAX_PARTITION_KEY_CHARS:
        raise InvalidPartitionKeyError(
            f"partition key must be 1..{MAX_PARTITION_KEY_CHARS} characters, got {len(partition_key)}"
        )
    record = Record(data=data, partition_key=partition_key)
    # The keys the endpoint makes are ASCII ids: one byte a character, nothing to encode.
    size = len(data) + len(partition_key) if partition_key.isascii() else record_size(record)
    if size > max_record_bytes:
        raise RecordTooLargeError(size, max_record_bytes, partition_key)
    return record


def record_size(record: Record) -> int:
    """What the quotas count: data + partition key, in UTF-8 bytes."""
    try:
        return len(record.data) + len(record.partition_key.encode("utf-8"))
    except UnicodeEncodeError as exc:  # a lone surrogate: no bytes Kinesis could store
        raise InvalidPartitionKeyError(f"partition key is not encodable as UTF-8: {exc.reason}") from exc


def partition_key(session_id: str | None, event_id: str) -> str:
    """K3: the session id; without one, the event id.

    Both are high-cardinality ids minted by the server. Not the principal: one busy service
    principal calling statelessly (2026-07-28 has no transport sessions) would pin one shard.
    Never the tool name, a rounded timestamp or a constant.
    """
    return session_id or event_id


def partition_key_for(event: ToolCallEvent) -> str:
    """K3 for an event object (:func:`partition_key`)."""
    return partition_key(event.session_id, event.event_id)


def plan_batches(
    records: Iterable[Record],
    max_records: int = MAX_RECORDS_PER_CALL,
    max_bytes: int = MAX_BYTES_PER_CALL,
) -> list[list[Record]]:
    """Greedy, order-preserving split into requests within both call limits.

    Records are assumed already checked (each ≤ the record limit ≤ ``max_bytes``), so every
    batch holds at least one record and the loop always progresses.
    """
    return bounded_runs(records, size=record_size, max_items=max_records, max_bytes=max_bytes)
