"""Audit function: session-table stream records -> audit trail and TTL-expiry side effects.

A record that fails is logged with its sequence number and reported alone as a batch item
failure (A5); the event source mapping retries it. A change a traced request made is audited
in a span of that request's trace: on its log lines, and exported when spans are on.
"""

from __future__ import annotations

import time
from typing import Any

from mcp_platform.application.metrics import configure_logging
from mcp_platform.bootstrap.audit import build_audit_processor
from mcp_platform.bootstrap.stream_batch import PartialBatchResponse, Record, dynamodb_sequence_number, process_batch
from mcp_platform.bootstrap.telemetry import build_spans, record_work
from mcp_platform.config import Settings

# Built once per execution environment and reused while warm.
settings = Settings.from_env()
configure_logging(settings.service_name, settings.log_level)
audit = build_audit_processor(settings)
spans = build_spans(settings)  # None unless span export is configured


def record_handler(record: Record) -> None:
    started_ns = time.time_ns()
    outcome = audit.process(record)
    record_work(
        spans,
        "audit",
        trace_id=outcome.trace_id,
        parent_id=outcome.span_id,
        started_ns=started_ns,
        attributes={"messaging.message.id": outcome.sequence_number, "mcp.audit.action": outcome.action},
    )


def lambda_handler(event: dict[str, Any], context: Any) -> PartialBatchResponse:
    try:
        return process_batch(event, record_handler, identify=dynamodb_sequence_number)
    finally:
        if spans is not None:
            spans.flush()  # inside the invocation: the environment may be frozen once it returns
