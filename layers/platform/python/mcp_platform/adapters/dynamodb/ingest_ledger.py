"""The ingest's writes in the session table: the tool-call record and the usage counters.

Each is one TransactWriteItems (:func:`.transact.transact_write`), and each decides
"exactly once" by its own conditions, never by a read:

1. the record (``session#<id>`` / ``tool#<started_at>#<id>``, D1/D4) with a ConditionCheck that
   the session is alive (its metadata item exists, has not expired and was not ended, as for
   D7/D10) and one that the endpoint's ``toolcall#<id>`` marker is absent. It is a transaction of
   its own because inside the counting one either failure would cancel the counters.
2. the dedupe marker ``event#<id>`` / ``dedupe`` with ``attribute_not_exists(pk)`` + an Update of
   ``usage#<principal>`` / ``<day>#<tool>`` ADDing the counters: they move iff the marker is new.
   With quotas on, a third action ADDs the call to ``usage#<principal>`` / ``quota#<month>``
   (the month's total and the day's), which the endpoint reads to enforce them. A tenant
   caller's event (``principal`` is then its tenant-qualified owner) counts twice more: the same
   counters on ``usage#tenant:<tenant>``, the tenant's whole usage and quota totals.

The record and the marker carry the event's ``trace_id`` and ``span_id`` when it has them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.transact import failed_at, transact_write
from mcp_platform.application.auth.tenants import tenant_usage_subject
from mcp_platform.application.events.ports import RecordWrite
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.protocol.clock import month_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

# The session store's "session alive" condition (D7/D10), on the metadata item.
SESSION_ALIVE = "attribute_exists(#pk) AND #ttl > :now AND #st = :active"
# Action order of the record transaction (CancellationReasons follow it).
_ALIVE_CHECK, _MARKER_CHECK, _RECORD_PUT = 0, 1, 2


class CountedEventMarkers:
    """:class:`~mcp_platform.application.events.relay.CountedEvents` over ingest's dedupe markers
    (an eventually consistent GetItem: a marker just written and not yet seen costs one more
    record on the stream, which ingest then counts as the duplicate it is)."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._ddb = client
        self._table = table_name

    def counted(self, event_id: str) -> bool:
        key = {ts.PK: {"S": ts.event_dedupe_pk(event_id)}, ts.SK: {"S": ts.EVENT_DEDUPE_SK}}
        return "Item" in self._ddb.get_item(
            TableName=self._table, Key=key, ProjectionExpression="#pk", ExpressionAttributeNames={"#pk": ts.PK}
        )


class DynamoIngestLedger:
    """The ingest's :class:`~mcp_platform.application.events.ports.IngestLedger`; ``client`` is the
    plain DynamoDB client (conditions are decided by DynamoDB, not by a cache)."""

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        *,
        max_conflict_retries: int = 3,
        sleep: Callable[[float], None] = time.sleep,
        quota_totals: bool = False,
    ) -> None:
        self._ddb = client
        self._table = table_name
        self._retries = max_conflict_retries
        self._sleep = sleep
        self._quota_totals = quota_totals

    def record_tool_call(self, event: ToolCallEvent, *, now: float) -> RecordWrite:
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
            **_trace(event),
        }
        alive_check: TransactWriteItemTypeDef = {
            "ConditionCheck": {
                "TableName": self._table,
                "Key": {ts.PK: pk, ts.SK: {"S": ts.METADATA_SK}},
                "ConditionExpression": SESSION_ALIVE,
                "ExpressionAttributeNames": {"#pk": ts.PK, "#ttl": ts.TTL, "#st": ts.STATUS},
                "ExpressionAttributeValues": {
                    # Whole seconds, floored, as the store compares them (D6).
                    ":now": {"N": str(math.floor(now))},
                    ":active": {"S": ts.STATUS_ACTIVE},
                },
            }
        }
        # D4: the endpoint's commit writes the record together with its ``toolcall#<id>`` marker;
        # when that marker exists the call is recorded, whatever started_at this event carries.
        marker_check: TransactWriteItemTypeDef = {
            "ConditionCheck": {
                "TableName": self._table,
                "Key": {ts.PK: pk, ts.SK: {"S": ts.tool_call_marker_sk(event.event_id)}},
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": ts.PK},
            }
        }
        record_put: TransactWriteItemTypeDef = {
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
            return RecordWrite.WRITTEN
        if failed_at(reasons, _MARKER_CHECK) or failed_at(reasons, _RECORD_PUT):
            return RecordWrite.ALREADY_RECORDED  # D4: the original stays as is
        if failed_at(reasons, _ALIVE_CHECK):
            return RecordWrite.SESSION_GONE
        raise RuntimeError(f"record transaction cancelled for unexpected reasons {reasons}")

    def count_once(self, event: ToolCallEvent, *, marker_expires_at: int) -> bool:
        marker = {
            ts.PK: {"S": ts.event_dedupe_pk(event.event_id)},
            ts.SK: {"S": ts.EVENT_DEDUPE_SK},
            ts.TTL: {"N": str(marker_expires_at)},  # epoch seconds (D5)
            ts.EVENT_ID: {"S": event.event_id},
            **_trace(event),
        }
        items: list[TransactWriteItemTypeDef] = [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": marker,
                    "ConditionExpression": "attribute_not_exists(#pk)",
                    "ExpressionAttributeNames": {"#pk": ts.PK},
                }
            },
        ]
        # The caller's counters, and its tenant's: one partition answers for a whole tenant.
        subjects = [event.principal] if event.tenant is None else [event.principal, tenant_usage_subject(event.tenant)]
        items += [self._usage_update(event, subject) for subject in subjects]
        if self._quota_totals:
            items += [self._quota_totals_update(event, subject) for subject in subjects]
        reasons = transact_write(self._ddb, items, max_conflict_retries=self._retries, sleep=self._sleep)
        if reasons and not failed_at(reasons, 0):
            raise RuntimeError(f"counting transaction cancelled for unexpected reasons {reasons}")
        return not reasons  # a failed marker condition: already counted

    def _usage_update(self, event: ToolCallEvent, subject: str) -> TransactWriteItemTypeDef:
        return {
            "Update": {
                "TableName": self._table,
                "Key": {
                    ts.PK: {"S": ts.usage_pk(subject)},
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
                    ":err": {"N": "0" if event.status == "ok" else "1"},
                    ":rq": {"N": str(event.request_bytes)},
                    ":rs": {"N": str(event.response_bytes)},
                    ":d": {"N": _num(event.duration_ms)},
                },
            }
        }

    def _quota_totals_update(self, event: ToolCallEvent, subject: str) -> TransactWriteItemTypeDef:
        day = event.started_date
        return {
            "Update": {
                "TableName": self._table,
                "Key": {
                    ts.PK: {"S": ts.usage_pk(subject)},
                    ts.SK: {"S": ts.usage_totals_sk(month_of(day))},
                },
                "UpdateExpression": "ADD #c :one, #d :one",
                "ExpressionAttributeNames": {"#c": ts.USAGE_CALLS, "#d": ts.usage_day_attribute(day)},
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        }


def _trace(event: ToolCallEvent) -> dict[str, Any]:
    """The event's trace and span ids as item attributes: a call's trace id finds its records."""
    attributes: dict[str, Any] = {}
    if event.trace_id is not None:
        attributes[ts.TRACE_ID] = {"S": event.trace_id}
    if event.span_id is not None:
        attributes[ts.SPAN_ID] = {"S": event.span_id}
    return attributes


def _num(value: float) -> str:
    """DynamoDB numbers as plain decimal strings (no exponent, no binary float noise)."""
    return format(Decimal(repr(value)), "f") if isinstance(value, float) else str(value)
