"""Audit function: session-table stream records -> audit trail and TTL-expiry side effects.

A record that fails is logged with its sequence number and reported alone as a batch item
failure (A5); the event source mapping retries it.
"""

from __future__ import annotations

from typing import Any

from mcp_platform.application.metrics import configure_logging
from mcp_platform.bootstrap.audit import build_audit_processor
from mcp_platform.bootstrap.stream_batch import PartialBatchResponse, Record, dynamodb_sequence_number, process_batch
from mcp_platform.config import Settings

# Built once per execution environment and reused while warm.
settings = Settings.from_env()
configure_logging(settings.service_name, settings.log_level)
audit = build_audit_processor(settings)


def record_handler(record: Record) -> None:
    audit.process(record)


def lambda_handler(event: dict[str, Any], context: Any) -> PartialBatchResponse:
    return process_batch(event, record_handler, identify=dynamodb_sequence_number)
