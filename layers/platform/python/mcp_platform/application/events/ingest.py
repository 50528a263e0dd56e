"""Ingest domain: Kinesis record → idempotent tool-call record + exact usage counters.

Per event, in this order:

1. the tool-call record (``session#<id>`` / ``tool#<started_at>#<id>``, D1/D4), in one
   TransactWriteItems with a ConditionCheck that the session is alive (its metadata item
   exists, has not expired and was not ended, as for D7/D10). The record's
   ``attribute_not_exists(pk)`` failing means the endpoint's commit (or an earlier delivery)
   already wrote it: success, the record is immutable and never touched. The session check
   failing means the session expired and may already have been cleaned up (A4): the record is
   skipped, because a late or replayed event must not leave an orphan without ttl behind.
   It is a transaction of its own because inside the counting one either failure would
   cancel the counters.
2. one TransactWriteItems: Put dedupe marker ``event#<id>`` / ``dedupe`` with
   ``attribute_not_exists(pk)`` + Update ``usage#<principal>`` / ``<day>#<tool>`` ADD counters.
   The counters move iff the marker is new, so redelivery can never count twice; a cancellation
   whose reason is the marker's ConditionalCheckFailed is a duplicate, hence success. The
   marker outlives the stream's retention, so even a replay from TRIM_HORIZON finds it.

Step 1 before step 2 means "marker exists ⇒ record exists (or its session was gone)": a crash
between them is repaired by the redelivery. Events without a session have no session
partition: only usage is counted.

The stream also carries typed platform events (:mod:`.stream_events`): a ``session.expired``
event (A4) is acknowledged and logged, never counted as a tool call and never a batch item
failure, so an expiry cannot reach the ingest DLQ. Only records that decode to no known event
type are poison (A5).
"""

from __future__ import annotations

import base64
import binascii
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.transact import failed_at, transact_write
from mcp_platform.application.events.schema import TOOL_CALL_TYPE, EventSchemaError, ToolCallEvent
from mcp_platform.application.events.stream_events import SessionExpiredEvent, StreamEvent, decode_stream_event

logger = logging.getLogger(__name__)

# Kinesis keeps a record for the stream's retention (K7: 168 h by default, up to 8760 h); a
# replay from TRIM_HORIZON can redeliver anything still retained, so the dedupe marker must
# outlive it. One more day of margin for processing lag.
DEFAULT_RETENTION_HOURS = 168
DEDUPE_MARGIN_HOURS = 24

# The session store's "session alive" condition (D7/D10), on the metadata item.
SESSION_ALIVE = "attribute_exists(#pk) AND #ttl > :now AND #st = :active"
# Action order of the record transaction (CancellationReasons follow it).
_ALIVE_CHECK, _MARKER_CHECK, _RECORD_PUT = 0, 1, 2


def dedupe_ttl_seconds(retention_hours: int) -> int:
    """Lifetime of an ingest dedupe marker for a stream retaining records ``retention_hours``."""
    return (retention_hours + DEDUPE_MARGIN_HOURS) * 3600


DEFAULT_DEDUPE_TTL_S = dedupe_ttl_seconds(DEFAULT_RETENTION_HOURS)


class PoisonRecordError(ValueError):
    """A record that can never be ingested (bad base64, JSON, type or schema): a batch item failure."""


def decode_record(data_b64: str) -> StreamEvent:
    """Lambda delivers Kinesis data base64-encoded; decode and validate, or raise PoisonRecordError."""
    try:
        raw = base64.b64decode(data_b64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise PoisonRecordError(f"data is not base64: {exc}") from exc
    try:
        return decode_stream_event(raw)
    except EventSchemaError as exc:
        raise PoisonRecordError(f"invalid stream event: {exc}") from exc


@dataclass(frozen=True)
class IngestOutcome:
    event_id: str
    record_written: bool  # False: already there, no session, the session is gone, or not a tool call
    counted: bool  # False: duplicate delivery (counters untouched) or not a tool call
    session_gone: bool = False  # the record was skipped: session expired, ended or deleted
    event_type: str = TOOL_CALL_TYPE


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
        event = decode_record(data_b64)
        if isinstance(event, SessionExpiredEvent):
            return self.acknowledge(event)
        return self.ingest(event)

    def acknowledge(self, event: SessionExpiredEvent) -> IngestOutcome:
        """A4: the expiry's side effects ran in the audit function; ingest has nothing to write.

        Not a tool call, so no record and no usage; the audit table keeps the summary.
        """
        logger.info("%s event %s acknowledged (%d tool calls)", event.event_type, event.event_id, event.tool_calls)
        return IngestOutcome(event.event_id, record_written=False, counted=False, event_type=event.event_type)

    def ingest(self, event: ToolCallEvent) -> IngestOutcome:
        written, gone = self._put_record(event) if event.session_id else (False, False)
        if gone:
            logger.info("session of event %s is gone; tool-call record skipped", event.event_id)
        return IngestOutcome(event.event_id, written, self._count_once(event), session_gone=gone)

    def _put_record(self, event: ToolCallEvent) -> tuple[bool, bool]:
        """Returns (written, session_gone)."""
        assert event.session_id is not None
        pk = {"S": ts.session_pk(event.session_id)}
        item = {
            ts.PK: pk,
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
        alive_check = {
            "ConditionCheck": {
                "TableName": self._table,
                "Key": {ts.PK: pk, ts.SK: {"S": ts.METADATA_SK}},
                "ConditionExpression": SESSION_ALIVE,
                "ExpressionAttributeNames": {"#pk": ts.PK, "#ttl": ts.TTL, "#st": ts.STATUS},
                "ExpressionAttributeValues": {
                    # Whole seconds, floored, as the store compares them (D6).
                    ":now": {"N": str(math.floor(self._now()))},
                    ":active": {"S": ts.STATUS_ACTIVE},
                },
            }
        }
        # D4: the endpoint's commit writes the record together with its ``toolcall#<id>`` marker;
        # when that marker exists the call is recorded, whatever started_at this event carries.
        marker_check = {
            "ConditionCheck": {
                "TableName": self._table,
                "Key": {ts.PK: pk, ts.SK: {"S": ts.tool_call_marker_sk(event.event_id)}},
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": ts.PK},
            }
        }
        record_put = {
            "Put": {
                "TableName": self._table,
                "Item": item,
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": ts.PK},
            }
        }
        actions = [alive_check, marker_check, record_put]
        reasons = transact_write(self._ddb, actions, max_conflict_retries=self._retries, sleep=self._sleep)
        if not reasons:
            return True, False
        if failed_at(reasons, _MARKER_CHECK) or failed_at(reasons, _RECORD_PUT):
            return False, False  # D4: a duplicate is a silent success; the original stays as is
        if failed_at(reasons, _ALIVE_CHECK):
            return False, True
        raise RuntimeError(f"record transaction cancelled for unexpected reasons {reasons}")

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
        reasons = transact_write(self._ddb, items, max_conflict_retries=self._retries, sleep=self._sleep)
        if reasons and not failed_at(reasons, 0):
            raise RuntimeError(f"counting transaction cancelled for unexpected reasons {reasons}")
        return not reasons  # a failed marker condition: already counted


def _num(value: float) -> str:
    """DynamoDB numbers as plain decimal strings (no exponent, no binary float noise)."""
    return format(Decimal(repr(value)), "f") if isinstance(value, float) else str(value)
