"""Partial batch responses of the stream processors: ingest (Kinesis) and audit (DynamoDB Streams).

Each record of a batch is handled on its own, in a trace scope of its own (a handler activates
the record's span once it knows it, so its log lines carry the record's trace). A record whose
handler raises is logged with its sequence number and reported in ``batchItemFailures``; the
others proceed, and the event source mapping retries from the first failed record, bisects and
finally dead-letters the poison one (A1, A5). When every record failed, the invocation fails
as a whole (:class:`BatchFailed`), so the mapping treats it as a function error.

This replaces Powertools' batch utility, whose import loads all of Powertools (its logger,
metrics, tracer and every event data class) at each cold start of both functions; see
docs/architecture/decisions.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from mcp_platform.protocol import trace_context

logger = logging.getLogger(__name__)

Record = Mapping[str, Any]


class ItemFailure(TypedDict):
    itemIdentifier: str


class PartialBatchResponse(TypedDict):
    batchItemFailures: list[ItemFailure]


class BatchFailed(Exception):
    """Every record of the batch failed: the invocation fails, and the mapping retries it whole."""


def kinesis_sequence_number(record: Record) -> str:
    return str(record["kinesis"]["sequenceNumber"])


def kinesis_shard(record: Record) -> str:
    """The stream and shard a Kinesis record came from, ``<stream name>/<shard id>``: its
    ``eventSourceARN`` (the stream's, or its consumer's under it) and ``eventID``
    (``<shard id>:<sequence number>``)."""
    stream = str(record["eventSourceARN"]).split(":", 5)[5].split("/")[1]
    return f"{stream}/{str(record['eventID']).split(':', 1)[0]}"


def dynamodb_sequence_number(record: Record) -> str:
    return str(record["dynamodb"]["SequenceNumber"])


def process_batch(
    event: Mapping[str, Any], handle: Callable[[Record], object], *, identify: Callable[[Record], str]
) -> PartialBatchResponse:
    """Runs ``handle`` on every record of ``event``; ``identify`` names a record in the response
    (its sequence number)."""
    records = event.get("Records") or []
    failures: list[ItemFailure] = []
    for record in records:
        scope = trace_context.scope()
        try:
            handle(record)
        except Exception:
            identifier = identify(record)
            logger.exception("record %s failed", identifier, extra={"sequence_number": identifier})
            failures.append({"itemIdentifier": identifier})
        finally:
            trace_context.end_scope(scope)
    if records and len(failures) == len(records):
        raise BatchFailed(f"all {len(records)} records of the batch failed")
    return {"batchItemFailures": failures}
