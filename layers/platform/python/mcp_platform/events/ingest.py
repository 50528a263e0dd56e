"""Ingest domain: Kinesis record → idempotent tool-call record + exact usage counters.

Per event, in this order:

1. the tool-call record (``session#<id>`` / ``tool#<started_at>#<id>``, D1/D4) is Put with
   ``attribute_not_exists(pk)``, alone. ConditionalCheckFailed means the endpoint's commit (or
   an earlier delivery) already wrote it: success, the record is immutable and never touched.
   It is outside the transaction because inside one that failure would cancel the counters.
2. one TransactWriteItems: Put dedupe marker ``event#<id>`` / ``dedupe`` with
   ``attribute_not_exists(pk)`` + Update ``usage#<principal>`` / ``<day>#<tool>`` ADD counters.
   The counters move iff the marker is new, so redelivery can never count twice; a cancellation
   whose only reason is the marker's ConditionalCheckFailed is a duplicate, hence success.

Step 1 before step 2 means "marker exists ⇒ record exists": a crash between them is repaired by
the redelivery. Events without a session have no session partition: only usage is counted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from mcp_platform import table_schema as ts
from mcp_platform.conditional_writes import put_if_absent
from mcp_platform.events.schema import EventSchemaError, ToolCallEvent

logger = logging.getLogger(__name__)

# Kinesis retention is ≤ 365 days but redelivery happens within the 168 h default (K7) window
# of the event source mapping; one more day of margin.
DEFAULT_DEDUPE_TTL_S = 8 * 24 * 3600


class PoisonRecordError(ValueError):
    """A record that can never be ingested (bad base64, JSON or schema): a batch item failure."""


def decode_record(data_b64: str) -> ToolCallEvent:
    """Lambda delivers Kinesis data base64-encoded; decode and validate, or raise PoisonRecordError."""
    try:
        raw = base64.b64decode(data_b64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise PoisonRecordError(f"data is not base64: {exc}") from exc
    try:
        return ToolCallEvent.from_bytes(raw)
    except EventSchemaError as exc:
        raise PoisonRecordError(f"invalid tool-call event: {exc}") from exc


@dataclass(frozen=True)
class IngestOutcome:
    event_id: str
    record_written: bool  # False: already there (endpoint commit or earlier delivery)
    counted: bool  # False: duplicate delivery, counters untouched


class EventIngestor:
    def __init__(
        self,
        dynamodb_client: Any,
        table_name: str,
        *,
        dedupe_ttl_s: int = DEFAULT_DEDUPE_TTL_S,
        max_conflict_retries: int = 3,
        now: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._ddb = dynamodb_client
        self._table = table_name
        self._dedupe_ttl_s = dedupe_ttl_s
        self._retries = max_conflict_retries
        self._now = now
        self._sleep = sleep

    def ingest_record(self, data_b64: str) -> IngestOutcome:
        return self.ingest(decode_record(data_b64))

    def ingest(self, event: ToolCallEvent) -> IngestOutcome:
        written = self._put_record(event) if event.session_id else False
        return IngestOutcome(event.event_id, written, self._count_once(event))

    def _put_record(self, event: ToolCallEvent) -> bool:
        assert event.session_id is not None
        item = {
            ts.PK: {"S": ts.session_pk(event.session_id)},
            ts.SK: {"S": ts.tool_record_sk(event.started_at, event.event_id)},
            ts.TOOL_CALL_ID: {"S": event.event_id},
            ts.TOOL_NAME: {"S": event.tool},
            ts.IS_ERROR: {"BOOL": event.status != "ok"},
            ts.STARTED_AT: {"S": event.started_at},
            ts.FINISHED_AT: {"S": event.finished_at},
            ts.PRINCIPAL: {"S": event.principal},
            ts.USAGE_REQUEST_BYTES: {"N": str(event.request_bytes)},
            ts.USAGE_RESPONSE_BYTES: {"N": str(event.response_bytes)},
            ts.USAGE_DURATION_MS: {"N": _num(event.duration_ms)},
        }
        # D4: a duplicate is a silent success; the original stays as is.
        return put_if_absent(self._ddb, self._table, item, ts.PK)

    def _count_once(self, event: ToolCallEvent) -> bool:
        marker = {
            ts.PK: {"S": ts.event_dedupe_pk(event.event_id)},
            ts.SK: {"S": ts.EVENT_DEDUPE_SK},
            ts.TTL: {"N": str(int(self._now()) + self._dedupe_ttl_s)},  # epoch seconds (D5)
            ts.EVENT_ID: {"S": event.event_id},
        }
        is_error = 0 if event.status == "ok" else 1
        items: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": marker,
                    "ConditionExpression": "attribute_not_exists(#pk)",
                    "ExpressionAttributeNames": {"#pk": ts.PK},
                }
            },
            {
                "Update": {
                    "TableName": self._table,
                    "Key": {
                        ts.PK: {"S": ts.usage_pk(event.principal)},
                        ts.SK: {"S": ts.usage_sk(event.started_date, event.tool)},
                    },
                    "UpdateExpression": "ADD #c :one, #e :err, #rq :rq, #rs :rs, #d :d",
                    "ExpressionAttributeNames": {
                        "#c": ts.USAGE_CALLS,
                        "#e": ts.USAGE_ERRORS,
                        "#rq": ts.USAGE_REQUEST_BYTES,
                        "#rs": ts.USAGE_RESPONSE_BYTES,
                        "#d": ts.USAGE_DURATION_MS,
                    },
                    "ExpressionAttributeValues": {
                        ":one": {"N": "1"},
                        ":err": {"N": str(is_error)},
                        ":rq": {"N": str(event.request_bytes)},
                        ":rs": {"N": str(event.response_bytes)},
                        ":d": {"N": _num(event.duration_ms)},
                    },
                }
            },
        ]
        for attempt in range(self._retries + 1):
            try:
                self._ddb.transact_write_items(TransactItems=items, ClientRequestToken=_token(event.event_id))
                return True
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code")
                reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
                if code == "TransactionCanceledException" and reasons[:1] == ["ConditionalCheckFailed"]:
                    return False  # marker exists: already counted
                retryable = code == "TransactionCanceledException" and "TransactionConflict" in reasons
                if not retryable or attempt == self._retries:
                    raise
                self._sleep(0.05 * 2**attempt * (0.5 + random.random() / 2))
        raise AssertionError("unreachable")


def _num(value: float) -> str:
    """DynamoDB numbers as plain decimal strings (no exponent, no binary float noise)."""
    return format(Decimal(repr(value)), "f") if isinstance(value, float) else str(value)


def _token(event_id: str) -> str:
    """ClientRequestToken (≤ 36 chars) makes a client-side retry of a landed call a no-op.

    Hashed with an "ingest#" prefix: the session store's commit uses the raw tool call id as
    its token (D10), and one token reused with different parameters within DynamoDB's
    10-minute window is refused with IdempotentParameterMismatch.
    """
    return hashlib.sha256(f"ingest#{event_id}".encode()).hexdigest()[:36]
