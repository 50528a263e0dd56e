"""PutRecords request sizing (K1) and partition-key choice (K3): pure functions, no I/O."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from mcp_platform.events.schema import ToolCallEvent

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


@dataclass(slots=True)
class Entry:
    """One record ready for PutRecords; ``seq`` is its position in the producer's buffer."""

    seq: int
    data: bytes
    partition_key: str
    size: int
    """What the quotas count: data + partition key, in UTF-8 bytes (:func:`new_entry`)."""
    request: dict[str, object]
    """The PutRecords request entry (built once: a record may be sent more than once)."""


def new_entry(seq: int, data: bytes, partition_key: str, max_record_bytes: int = MAX_RECORD_BYTES) -> Entry:
    """A record checked against K1 as it is made: a partition key of 1-256 characters, data and
    key within the per-record limit (refused whole, never truncated)."""
    if not partition_key or len(partition_key) > MAX_PARTITION_KEY_CHARS:
        raise InvalidPartitionKeyError(
            f"partition key must be 1..{MAX_PARTITION_KEY_CHARS} characters, got {len(partition_key)}"
        )
    size = len(data) + len(partition_key.encode("utf-8"))
    if size > max_record_bytes:
        raise RecordTooLargeError(size, max_record_bytes, partition_key)
    return Entry(seq, data, partition_key, size, {"Data": data, "PartitionKey": partition_key})


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
    entries: Iterable[Entry],
    max_records: int = MAX_RECORDS_PER_CALL,
    max_bytes: int = MAX_BYTES_PER_CALL,
) -> Iterator[list[Entry]]:
    """Greedy, order-preserving split into requests within both call limits.

    Entries are assumed already checked (each ≤ the record limit ≤ ``max_bytes``), so every
    batch holds at least one entry and the loop always progresses.
    """
    batch: list[Entry] = []
    batch_bytes = 0
    for entry in entries:
        if batch and (len(batch) >= max_records or batch_bytes + entry.size > max_bytes):
            yield batch
            batch, batch_bytes = [], 0
        batch.append(entry)
        batch_bytes += entry.size
    if batch:
        yield batch
