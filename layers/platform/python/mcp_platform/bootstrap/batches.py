"""Partial batch responses of the event functions through Powertools' ``BatchProcessor``: audit
(DynamoDB Streams) and the task worker (SQS). Ingest (Kinesis) applies its batch through the
shard's checkpoint, all of it up to its first failing record (``functions/ingest``), which a
processor handling records one by one cannot; it takes the shard's name and the counting from here.

Each record reaches its handler as Powertools' event source data class, on its own and in a
trace scope of its own (a handler activates the record's span once it knows it, so its log lines
carry the record's trace). A record whose handler raises is logged with its identifier (a stream
record's sequence number) inside that scope and reported in ``batchItemFailures``; the others
proceed, and the event source mapping retries from the first failed record, bisects and finally
dead-letters the poison one (A1, A5). When every record of a stream batch failed, Powertools
fails the invocation as a whole (``BatchProcessingError``), so the mapping treats it as a
function error. Every invocation counts its records and its failed ones in the function's
metric set (flushed by its ``log_metrics``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, process_partial_response

from mcp_platform.application.metrics import RECORDS_CONSUMED, RECORDS_FAILED
from mcp_platform.protocol import trace_context

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import EphemeralMetrics
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
    from aws_lambda_powertools.utilities.data_classes.kinesis_stream_event import KinesisStreamRecord

logger = logging.getLogger(__name__)

R = TypeVar("R")


def kinesis_sequence_number(record: KinesisStreamRecord) -> str:
    return record.kinesis.sequence_number


def kinesis_shard(record: KinesisStreamRecord) -> str:
    """The stream and shard a Kinesis record came from, ``<stream name>/<shard id>``: its
    ``eventSourceARN`` (the stream's, or its consumer's under it) and ``eventID``
    (``<shard id>:<sequence number>``)."""
    stream = record.event_source_arn.split(":", 5)[5].split("/")[1]
    return f"{stream}/{record.event_id.split(':', 1)[0]}"


def dynamodb_sequence_number(record: DynamoDBRecord) -> str:
    return str(record.dynamodb.sequence_number if record.dynamodb is not None else "")


def traced_records(handle: Callable[[R], object], *, identify: Callable[[R], str]) -> Callable[[R], None]:
    """``handle`` run on one record in a trace scope of its own; a failure is logged in that
    scope, with the record's identifier, and raised on to the batch processor."""

    def run(record: R) -> None:
        scope = trace_context.scope()
        try:
            handle(record)
        except Exception:
            identifier = identify(record)
            logger.exception("record %s failed", identifier, extra={"sequence_number": identifier})
            raise
        finally:
            trace_context.end_scope(scope)

    return run


def process_batch(
    event: dict[str, Any],
    context: Any,
    *,
    processor: BatchProcessor,
    record_handler: Callable[[Any], None],
    metrics: EphemeralMetrics | None = None,
) -> PartialItemFailureResponse:
    """Powertools' partial batch response for ``event``; the records and the failed ones are
    counted in ``metrics``, whether the batch succeeded, partly failed or failed whole. An event
    without records (Lambda never sends one; a local poller may) is a success, where Powertools
    would refuse it."""
    records = event.get("Records") or []
    try:
        if not records:
            return {"batchItemFailures": []}
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    finally:
        if metrics is not None:
            count_batch(metrics, records=len(records), failed=len(processor.fail_messages) if records else 0)


def count_batch(metrics: EphemeralMetrics, *, records: int, failed: int) -> None:
    """The invocation's records and the ones it reported failed (all of them: the batch failed)."""
    metrics.add_metric(name=RECORDS_CONSUMED, unit=MetricUnit.Count, value=records)
    metrics.add_metric(name=RECORDS_FAILED, unit=MetricUnit.Count, value=failed)
