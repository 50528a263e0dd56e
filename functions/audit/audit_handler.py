"""Audit function: session-table stream records -> audit trail and TTL-expiry side effects."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from mcp_platform.bootstrap.audit import build_audit_processor
from mcp_platform.config import Settings

# Built once per execution environment and reused while warm.
settings = Settings.from_env()
logger = Logger(service=settings.service_name)
audit = build_audit_processor(settings)
batch = BatchProcessor(event_type=EventType.DynamoDBStreams)


def record_handler(record: DynamoDBRecord) -> None:
    try:
        audit.process(record.raw_event)
    except Exception:
        # Logged with its sequence number, then re-raised: the batch processor reports this
        # record alone as a batch item failure (A5) and the event source mapping retries it.
        logger.exception(
            "audit record failed",
            extra={"sequence_number": record.raw_event["dynamodb"].get("SequenceNumber")},
        )
        raise


def lambda_handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    return process_partial_response(event=event, record_handler=record_handler, processor=batch, context=context)
