"""Audit function: session-table stream records -> audit trail, TTL-expiry side effects and the
relay of committed events ingest has not counted (K10).

On Powertools: ``BatchProcessor`` hands each record over as a ``DynamoDBRecord``; the audit reads
its wire images (``raw_event``: the diff is computed on them, never on deserialised copies). A
record that fails is logged with its sequence number and reported alone as a batch item failure
(A5); the event source mapping retries it. A change a traced request made is audited in a span of
that request's trace: on its log lines (``Logger``), and exported when spans are on. Each
invocation's records, failures and cold start are EMF metrics (``Metrics``).
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from mcp_platform.adapters.powertools import platform_logger, platform_metrics
from mcp_platform.bootstrap.audit import build_audit_processor
from mcp_platform.bootstrap.batches import dynamodb_sequence_number, process_batch, traced_records
from mcp_platform.bootstrap.telemetry import build_spans, record_work
from mcp_platform.config import Settings

# Built once per execution environment and reused while warm.
settings = Settings.from_env()
logger = platform_logger(settings.service_name, settings.log_level)
metrics = platform_metrics(settings.metrics_namespace, settings.service_name)
audit = build_audit_processor(settings)
spans = build_spans(settings)  # None unless span export is configured
processor = BatchProcessor(event_type=EventType.DynamoDBStreams)


def audit_change(record: DynamoDBRecord) -> None:
    started_ns = time.time_ns()
    outcome = audit.process(record.raw_event)
    record_work(
        spans,
        "audit",
        trace_id=outcome.trace_id,
        parent_id=outcome.span_id,
        started_ns=started_ns,
        attributes={"messaging.message.id": outcome.sequence_number, "mcp.audit.action": outcome.action},
    )


record_handler = traced_records(audit_change, identify=dynamodb_sequence_number)


@metrics.log_metrics(capture_cold_start_metric=True)
@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    try:
        return process_batch(event, context, processor=processor, record_handler=record_handler, metrics=metrics)
    finally:
        if spans is not None:
            spans.flush()  # inside the invocation: the environment may be frozen once it returns
