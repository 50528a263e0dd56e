"""Ingest function: Kinesis enhanced fan-out records -> idempotent tool-call records and usage.

Thin entry point (K5: the event source mapping reads through the registered EFO consumer).
Every record is handled on its own: a poison record raises PoisonRecordError and is reported
in ``batchItemFailures`` (then bisected and dead-lettered by the mapping); the rest proceed.
Typed platform events on the stream (``session.expired``, A4) are acknowledged, not poison.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp_platform.application.metrics import configure_logging
from mcp_platform.bootstrap.ingest import build_ingestor
from mcp_platform.bootstrap.stream_batch import PartialBatchResponse, Record, kinesis_sequence_number, process_batch
from mcp_platform.config import Settings

# Built once per execution environment and reused while warm.
settings = Settings.from_env()
configure_logging(settings.service_name, settings.log_level)
logger = logging.getLogger("ingest")
# A dedupe marker outlives the stream's retention: a replay from TRIM_HORIZON never counts twice.
ingestor = build_ingestor(settings)


def record_handler(record: Record) -> None:
    outcome = ingestor.ingest_record(record["kinesis"]["data"])
    logger.debug(
        "ingested",
        extra={
            "event_id": outcome.event_id,
            "event_type": outcome.event_type,
            "counted": outcome.counted,
            "trace_id": outcome.trace_id,
        },
    )


def lambda_handler(event: dict[str, Any], context: Any) -> PartialBatchResponse:
    return process_batch(event, record_handler, identify=kinesis_sequence_number)
