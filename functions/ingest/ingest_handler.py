"""Ingest function: Kinesis enhanced fan-out records -> idempotent tool-call records and usage.

Thin entry point (K5: the event source mapping reads through the registered EFO consumer). A
batch holds one shard's records in order, read through Powertools' ``KinesisStreamEvent``; its
usage is applied through the shard's checkpoint
(:meth:`~mcp_platform.application.events.ingest.EventIngestor.ingest_batch`), one write per
counter. The first record that fails (a poison record, PoisonRecordError, or a write that did
not go through) is the batch item failure: the mapping retries from it, bisects and in the end
dead-letters it; nothing after it was counted. When it is the batch's first record the
invocation fails as a whole (Powertools' ``BatchProcessingError``). Not Powertools'
``BatchProcessor``: it handles records one by one and goes on past a failure, which the
checkpoint must not. Typed platform events on the stream (``session.expired``, A4) are
acknowledged, not poison. A tool-call event's work is a span of its call's trace: on its log
line (``Logger``), and exported when spans are on. Each invocation's records, failures and cold
start are EMF metrics (``Metrics``).
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes import KinesisStreamEvent

from mcp_platform.adapters.powertools import platform_logger, platform_metrics
from mcp_platform.application.events.ingest import ShardRecord
from mcp_platform.bootstrap.batches import count_batch, kinesis_shard
from mcp_platform.bootstrap.ingest import build_ingestor
from mcp_platform.bootstrap.telemetry import build_spans, record_work
from mcp_platform.config import Settings
from mcp_platform.protocol import trace_context

# Built once per execution environment and reused while warm.
settings = Settings.from_env()
logger = platform_logger(settings.service_name, settings.log_level)
metrics = platform_metrics(settings.metrics_namespace, settings.service_name)
# A dedupe marker outlives the stream's retention: a replay from TRIM_HORIZON never counts twice.
ingestor = build_ingestor(settings)
spans = build_spans(settings)  # None unless span export is configured


@metrics.log_metrics(capture_cold_start_metric=True)
@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    records = list(KinesisStreamEvent(event).records) if event.get("Records") else []
    failed = 0
    try:
        if not records:
            return {"batchItemFailures": []}
        started_ns = time.time_ns()
        batch = [ShardRecord(r.kinesis.sequence_number, r.kinesis.data) for r in records]
        outcome = ingestor.ingest_batch(kinesis_shard(records[0]), batch)
        for done in outcome.outcomes:
            attributes = {"messaging.message.id": done.event_id, "mcp.event.type": done.event_type}
            if done.tool is not None:
                attributes["gen_ai.tool.name"] = done.tool
            scope = trace_context.scope()  # each event's span is its own, never the next one's
            try:
                record_work(
                    spans,
                    "ingest",
                    trace_id=done.trace_id,
                    parent_id=done.span_id,
                    started_ns=started_ns,
                    attributes=attributes,
                )
            finally:
                trace_context.end_scope(scope)
        if outcome.failed is None:
            return {"batchItemFailures": []}
        logger.error(
            "record %s failed: %r",
            outcome.failed,
            outcome.error,
            exc_info=outcome.error,
            extra={"sequence_number": outcome.failed},
        )
        if outcome.failed == batch[0].sequence_number:
            failed = len(records)
            raise BatchProcessingError(f"the batch's first record {outcome.failed} failed")
        failed = 1
        return {"batchItemFailures": [{"itemIdentifier": outcome.failed}]}
    finally:
        count_batch(metrics, records=len(records), failed=failed)
        if spans is not None:
            spans.flush()  # inside the invocation: the environment may be frozen once it returns
