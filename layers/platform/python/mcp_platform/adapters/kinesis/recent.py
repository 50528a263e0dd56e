"""Recent tool-call events of one session, read straight from the stream (K4).

Backs the ``recent_tool_events`` MCP tool. The session id is the partition key (K3), so only
the shards whose hash-key range holds MD5(session id) are read (plus their children after a
reshard): one shard in steady state, not the whole stream. Reads start AT_TIMESTAMP and are
bounded by count and wall time; a tool call must answer quickly.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from mcp_platform.adapters.kinesis.shard_reader import ShardReader, StartPosition
from mcp_platform.application.events.ports import RecentEvents
from mcp_platform.application.events.schema import EventSchemaError, ToolCallEvent
from mcp_platform.application.events.stream_events import decode_stream_event

if TYPE_CHECKING:
    from mypy_boto3_kinesis.type_defs import ShardTypeDef

logger = logging.getLogger(__name__)


def hash_key(partition_key: str) -> int:
    """Kinesis maps a partition key to a shard by the 128-bit MD5 of its UTF-8 bytes."""
    return int(hashlib.md5(partition_key.encode("utf-8"), usedforsecurity=False).hexdigest(), 16)


def shard_holds_key(shard: ShardTypeDef, key_hash: int) -> bool:
    hash_range = shard["HashKeyRange"]
    return int(hash_range["StartingHashKey"]) <= key_hash <= int(hash_range["EndingHashKey"])


def recent_session_events(
    reader: ShardReader,
    session_id: str,
    *,
    since: datetime | None = None,
    lookback: timedelta = timedelta(hours=1),
    max_events: int = 50,
    max_seconds: float = 2.0,
    monotonic: Callable[[], float] = time.monotonic,
) -> RecentEvents:
    """The newest ``max_events`` events of ``session_id`` since ``since`` (default: lookback).

    Events come back in ``started_at`` order: stream order can differ after producer retries.
    """
    start = since or datetime.now(UTC) - lookback
    key_hash = hash_key(session_id)
    deadline = monotonic() + max_seconds
    newest: deque[ToolCallEvent] = deque(maxlen=max_events)
    matched = skipped = 0
    for record in reader.read_stream(
        StartPosition.at_timestamp(start),
        shard_filter=lambda shard: shard_holds_key(shard, key_hash),
        deadline=deadline,
    ):
        if record.get("PartitionKey") != session_id:
            continue  # another session hashed onto the same shard
        try:
            event = decode_stream_event(record["Data"])
        except EventSchemaError as exc:
            skipped += 1
            logger.warning("skipping undecodable record %s: %s", record.get("SequenceNumber"), exc)
            continue
        # A typed platform event of this session (session.expired) is valid, just not a tool call.
        if not isinstance(event, ToolCallEvent) or event.session_id != session_id:
            continue
        matched += 1
        newest.append(event)
    ordered = sorted(newest, key=lambda e: e.started_at)
    truncated = matched > max_events or monotonic() >= deadline
    return RecentEvents(ordered, truncated=truncated, skipped_invalid=skipped)


@dataclass(frozen=True)
class KinesisRecentEvents:
    """``application.events.ports.RecentToolEvents`` over the stream's shard reader."""

    reader: ShardReader

    def session_events(self, session_id: str, *, lookback: timedelta, max_events: int) -> RecentEvents:
        return recent_session_events(self.reader, session_id, lookback=lookback, max_events=max_events)
