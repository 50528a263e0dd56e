"""Builds the ingest function's use case: the event ingestor over the DynamoDB ledger."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from mcp_platform.adapters.aws_clients import aws_client
from mcp_platform.adapters.dynamodb.ingest_ledger import DynamoIngestLedger
from mcp_platform.application.events.ingest import DEFAULT_DEDUPE_TTL_S, EventIngestor, dedupe_ttl_seconds
from mcp_platform.config import Settings
from mcp_platform.protocol.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def event_ingestor(
    dynamodb: DynamoDBClient,
    table_name: str,
    *,
    dedupe_ttl_s: int = DEFAULT_DEDUPE_TTL_S,
    max_conflict_retries: int = 3,
    clock: Clock = SYSTEM_CLOCK,
    sleep: Callable[[float], None] = time.sleep,
    quota_totals: bool = False,
) -> EventIngestor:
    """The ingestor writing through ``dynamodb`` (the plain client: conditions, never DAX);
    ``quota_totals``: it also keeps each principal's day and month totals the quotas read."""
    ledger = DynamoIngestLedger(
        dynamodb, table_name, max_conflict_retries=max_conflict_retries, sleep=sleep, quota_totals=quota_totals
    )
    return EventIngestor(ledger, dedupe_ttl_s=dedupe_ttl_s, clock=clock)


def build_ingestor(settings: Settings, *, dynamodb: DynamoDBClient | None = None) -> EventIngestor:
    """From settings; a dedupe marker outlives the stream's retention, so a replay from
    TRIM_HORIZON never counts twice."""
    return event_ingestor(
        dynamodb if dynamodb is not None else aws_client("dynamodb", settings),
        settings.session_table,
        dedupe_ttl_s=dedupe_ttl_seconds(settings.event_retention_hours),
        quota_totals=bool(settings.quotas),  # the totals cost a write per event: only for quotas
    )
