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

A batch's usage (:meth:`DynamoIngestLedger.apply_usage`) is one TransactWriteItems per chunk of
the shard's records: an Update of the shard's checkpoint ``ingest#<shard>`` / ``checkpoint``
under ``seq = :expected`` (the value read; absent for a new shard), an ``attribute_not_exists``
Put of the dedupe marker of each recorded event (a committed call, which the outbox relay may put
on the stream twice), and one Update per usage counter ADDing the chunk's sums. A redelivered
record is at or before the checkpoint and never reaches it; a concurrent writer fails the
checkpoint's condition. A chunk holds at most ``MAX_ACTIONS`` actions (DynamoDB's 100).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.transact import failed_at, transact_write
from mcp_platform.application.auth.tenants import tenant_usage_subject
from mcp_platform.application.events.ports import CountingFailed, RecordWrite
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.protocol.clock import month_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

# The session store's "session alive" condition (D7/D10), on the metadata item.
SESSION_ALIVE = "attribute_exists(#pk) AND #ttl > :now AND #st = :active"
# Action order of the record transaction (CancellationReasons follow it).
_ALIVE_CHECK, _MARKER_CHECK, _RECORD_PUT = 0, 1, 2
MAX_ACTIONS = 100  # of one TransactWriteItems
_CHECKPOINT = 0  # the checkpoint's Update comes first in a chunk's transaction


@dataclass
class _Sums:
    """One usage counter's share of a chunk: ADDed in one Update."""

    calls: int = 0
    errors: int = 0
    request_bytes: int = 0
    response_bytes: int = 0
    duration_ms: Decimal = Decimal(0)
    days: dict[str, int] = field(default_factory=dict)  # quota totals: calls per day attribute

    def add(self, event: ToolCallEvent) -> None:
        self.calls += 1
        self.errors += event.status != "ok"
        self.request_bytes += event.request_bytes
        self.response_bytes += event.response_bytes
        self.duration_ms += Decimal(_num(event.duration_ms))


class CountedEventMarkers:
    """:class:`~mcp_platform.application.events.relay.CountedEvents` over ingest's dedupe markers
    (an eventually consistent GetItem: a marker just written and not yet seen costs one more
    record on the stream, which ingest then counts as the duplicate it is)."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
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
        # The caller's counters, and its tenant's (one partition answers for a whole tenant):
        # the same updates a batch makes, for a batch of one.
        items += self._counter_updates([event])
        reasons = transact_write(self._ddb, items, max_conflict_retries=self._retries, sleep=self._sleep)
        if reasons and not failed_at(reasons, 0):
            raise RuntimeError(f"counting transaction cancelled for unexpected reasons {reasons}")
        return not reasons  # a failed marker condition: already counted

    # -- a batch's usage, through the shard's checkpoint -------------------------------------------
    def checkpoint(self, shard: str) -> str | None:
        item = self._ddb.get_item(
            TableName=self._table,
            Key=self._checkpoint_key(shard),
            ConsistentRead=True,  # X4: decides what is applied
        ).get("Item")
        return item[ts.CHECKPOINT_SEQUENCE]["S"] if item and ts.CHECKPOINT_SEQUENCE in item else None

    def apply_usage(
        self,
        shard: str,
        entries: Sequence[tuple[str, ToolCallEvent | None]],
        *,
        expected: str | None,
        marker_expires_at: int,
    ) -> set[str]:
        counted: set[str] = set()
        if all(event is None for _, event in entries):
            return counted  # platform events only: nothing to count, and acknowledging them again is harmless
        for chunk in self._chunks(entries):
            first, through = chunk[0][0], chunk[-1][0]
            events: dict[str, ToolCallEvent] = {}
            for _, event in chunk:
                if event is not None:
                    events.setdefault(event.event_id, event)  # two copies in one chunk: one counts
            try:
                counted |= self._apply_chunk(shard, events, expected, through, marker_expires_at)
            except Exception as exc:
                raise CountingFailed(first) from exc
            expected = through
        return counted

    def _apply_chunk(
        self, shard: str, events: dict[str, ToolCallEvent], expected: str | None, through: str, expires_at: int
    ) -> set[str]:
        while True:
            markers = [e for e in events.values() if e.recorded]
            actions: list[TransactWriteItemTypeDef] = [self._checkpoint_update(shard, expected, through)]
            actions += [self._marker_put(event, expires_at) for event in markers]
            actions += self._counter_updates(list(events.values()))
            reasons = transact_write(self._ddb, actions, max_conflict_retries=self._retries, sleep=self._sleep)
            if not reasons:
                return set(events)
            if failed_at(reasons, _CHECKPOINT):
                raise RuntimeError(f"checkpoint of {shard} moved since it was read (another writer)")
            counted_before = {e.event_id for i, e in enumerate(markers, start=1) if failed_at(reasons, i)}
            if not counted_before:
                raise RuntimeError(f"usage transaction cancelled for unexpected reasons {reasons}")
            events = {k: e for k, e in events.items() if k not in counted_before}  # again, without them

    def _chunks(
        self, entries: Sequence[tuple[str, ToolCallEvent | None]]
    ) -> list[list[tuple[str, ToolCallEvent | None]]]:
        """Consecutive runs of ``entries`` whose transaction fits MAX_ACTIONS (checkpoint, markers, counters)."""
        chunks: list[list[tuple[str, ToolCallEvent | None]]] = []
        current: list[tuple[str, ToolCallEvent | None]] = []
        keys: set[tuple[str, ...]] = set()
        for entry in entries:
            event = entry[1]
            more = set(self._counter_keys(event)) - keys if event is not None else set()
            marker = 1 if event is not None and event.recorded else 0
            if current and 1 + _markers(current) + marker + len(keys) + len(more) > MAX_ACTIONS:
                chunks.append(current)
                current, keys = [], set()
                more = set(self._counter_keys(event)) if event is not None else set()
            current.append(entry)
            keys |= more
        if current:
            chunks.append(current)
        return chunks

    def _counter_keys(self, event: ToolCallEvent) -> list[tuple[str, ...]]:
        keys: list[tuple[str, ...]] = []
        for subject in _subjects(event):
            keys.append((subject, event.started_date, event.tool))
            if self._quota_totals:
                keys.append((subject, month_of(event.started_date)))
        return keys

    def _counter_updates(self, events: list[ToolCallEvent]) -> list[TransactWriteItemTypeDef]:
        sums: dict[tuple[str, ...], _Sums] = {}
        for event in events:
            for key in self._counter_keys(event):
                tally = sums.setdefault(key, _Sums())
                tally.add(event)
                if len(key) == 2:
                    day = ts.usage_day_attribute(event.started_date)
                    tally.days[day] = tally.days.get(day, 0) + 1
        return [self._sums_update(key, tally) for key, tally in sums.items()]

    def _sums_update(self, key: tuple[str, ...], tally: _Sums) -> TransactWriteItemTypeDef:
        if len(key) == 2:  # the quota totals of a month
            subject, month = key
            names = {"#c": ts.USAGE_CALLS}
            values = {":c": {"N": str(tally.calls)}}
            parts = ["#c :c"]
            for i, (day, calls) in enumerate(sorted(tally.days.items())):
                names[f"#d{i}"] = day
                values[f":d{i}"] = {"N": str(calls)}
                parts.append(f"#d{i} :d{i}")
            return {
                "Update": {
                    "TableName": self._table,
                    "Key": {ts.PK: {"S": ts.usage_pk(subject)}, ts.SK: {"S": ts.usage_totals_sk(month)}},
                    "UpdateExpression": "ADD " + ", ".join(parts),
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": values,
                }
            }
        subject, day, tool = key
        return {
            "Update": {
                "TableName": self._table,
                "Key": {ts.PK: {"S": ts.usage_pk(subject)}, ts.SK: {"S": ts.usage_sk(day, tool)}},
                "UpdateExpression": "ADD #c :c, #e :e, #rq :rq, #rs :rs, #d :d",
                "ExpressionAttributeNames": {
                    "#c": ts.USAGE_CALLS,
                    "#e": ts.USAGE_ERRORS,
                    "#rq": ts.USAGE_REQUEST_BYTES,
                    "#rs": ts.USAGE_RESPONSE_BYTES,
                    "#d": ts.USAGE_DURATION_MS,
                },
                "ExpressionAttributeValues": {
                    ":c": {"N": str(tally.calls)},
                    ":e": {"N": str(tally.errors)},
                    ":rq": {"N": str(tally.request_bytes)},
                    ":rs": {"N": str(tally.response_bytes)},
                    ":d": {"N": format(tally.duration_ms, "f")},
                },
            }
        }

    def _checkpoint_key(self, shard: str) -> dict[str, Any]:
        return {ts.PK: {"S": ts.ingest_checkpoint_pk(shard)}, ts.SK: {"S": ts.INGEST_CHECKPOINT_SK}}

    def _checkpoint_update(self, shard: str, expected: str | None, through: str) -> TransactWriteItemTypeDef:
        names = {"#seq": ts.CHECKPOINT_SEQUENCE}
        values: dict[str, Any] = {":through": {"S": through}}
        if expected is None:
            condition = "attribute_not_exists(#seq)"
        else:
            condition = "#seq = :expected"
            values[":expected"] = {"S": expected}
        return {
            "Update": {
                "TableName": self._table,
                "Key": self._checkpoint_key(shard),
                "UpdateExpression": "SET #seq = :through",
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        }

    def _marker_put(self, event: ToolCallEvent, expires_at: int) -> TransactWriteItemTypeDef:
        marker = {
            ts.PK: {"S": ts.event_dedupe_pk(event.event_id)},
            ts.SK: {"S": ts.EVENT_DEDUPE_SK},
            ts.TTL: {"N": str(expires_at)},  # epoch seconds (D5)
            ts.EVENT_ID: {"S": event.event_id},
            **_trace(event),
        }
        return {
            "Put": {
                "TableName": self._table,
                "Item": marker,
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": ts.PK},
            }
        }


def _subjects(event: ToolCallEvent) -> list[str]:
    """Whose counters an event moves: its principal's, and its tenant's."""
    return [event.principal] if event.tenant is None else [event.principal, tenant_usage_subject(event.tenant)]


def _markers(entries: list[tuple[str, ToolCallEvent | None]]) -> int:
    return sum(1 for _, event in entries if event is not None and event.recorded)


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
