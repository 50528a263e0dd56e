"""Composition root of the ingest function: settings + client in, event ingestor out.

Built once per execution environment (module scope of ``functions/ingest/ingest_handler.py``)
and reused while warm.
"""

from __future__ import annotations

from typing import Any

from mcp_platform.adapters.aws_clients import aws_client
from mcp_platform.application.events.ingest import EventIngestor, dedupe_ttl_seconds
from mcp_platform.config import Settings


def build_ingestor(settings: Settings, *, dynamodb: Any = None) -> EventIngestor:
    # A dedupe marker outlives the stream's retention: a replay from TRIM_HORIZON never counts twice.
    return EventIngestor(
        dynamodb if dynamodb is not None else aws_client("dynamodb", settings),
        settings.session_table,
        dedupe_ttl_s=dedupe_ttl_seconds(settings.event_retention_hours),
    )
