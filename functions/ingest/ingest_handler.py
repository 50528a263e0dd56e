"""Ingest function: Kinesis enhanced fan-out records -> idempotent tool-call records and usage.

Thin entry point (K5: the event source mapping reads through the registered EFO consumer).
Every record is handled on its own: a poison record raises PoisonRecordError and is reported
in ``batchItemFailures`` (then bisected and dead-lettered by the mapping); the rest proceed.
Typed platform events on the stream (``session.expired``, A4) are acknowledged, not poison.
A tool-call event's work is a span of its call's trace: on its log line, and exported when
spans are on.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from mcp_platform.application.metrics import configure_logging
from mcp_platform.bootstrap.ingest import build_ingestor
from mcp_platform.bootstrap.stream_batch import PartialBatchResponse, Record, kinesis_sequence_number, process_batch
from mcp_platform.bootstrap.telemetry import build_spans, record_work
from mcp_platform.config import Settings

# Built once per execution environment and reused while warm.
settings = Settings.from_env()
configure_logging(settings.service_name, settings.log_level)
logger = logging.getLogger("ingest")
# A dedupe marker outlives the stream's retention: a replay from TRIM_HORIZON never counts twice.
ingestor = build_ingestor(settings)
spans = build_spans(settings)  # None unless span export is configured


def record_handler(record: Record) -> None:
    started_ns = time.time_ns()
    outcome = ingestor.ingest_record(record["kinesis"]["data"])
    attributes = {"messaging.message.id": outcome.event_id, "mcp.event.type": outcome.event_type}
    if outcome.tool is not None:
        attributes["gen_ai.tool.name"] = outcome.tool
    record_work(
        spans,
        "ingest",
        trace_id=outcome.trace_id,
        parent_id=outcome.span_id,
        started_ns=started_ns,
        attributes=attributes,
    )
    logger.debug(
        "ingested",
        extra={"event_id": outcome.event_id, "event_type": outcome.event_type, "counted": outcome.counted},
    )


def lambda_handler(event: dict[str, Any], context: Any) -> PartialBatchResponse:
    try:
        return process_batch(event, record_handler, identify=kinesis_sequence_number)
    finally:
        if spans is not None:
            spans.flush()  # inside the invocation: the environment may be frozen once it returns
