"""Ingest function: Kinesis enhanced fan-out records -> idempotent tool-call records and usage.

Thin entry point (K5: the event source mapping reads through the registered EFO consumer).
Every record is handled on its own: a poison record raises PoisonRecordError and is reported
in ``batchItemFailures`` (then bisected and dead-lettered by the mapping); the rest proceed.
Typed platform events on the stream (``session.expired``, A4) are acknowledged, not poison.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.kinesis_stream_event import KinesisStreamRecord

from mcp_platform.bootstrap.ingest import build_ingestor
from mcp_platform.config import Settings

# Built once per execution environment and reused while warm.
settings = Settings.from_env()
logger = Logger(service=settings.service_name)
processor = BatchProcessor(event_type=EventType.KinesisDataStreams)
# A dedupe marker outlives the stream's retention: a replay from TRIM_HORIZON never counts twice.
ingestor = build_ingestor(settings)


def record_handler(record: KinesisStreamRecord) -> None:
    outcome = ingestor.ingest_record(record.kinesis.data)
    logger.debug(
        "ingested",
        extra={
            "event_id": outcome.event_id,
            "event_type": outcome.event_type,
            "counted": outcome.counted,
            "trace_id": outcome.trace_id,
        },
    )


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    return dict(response)
