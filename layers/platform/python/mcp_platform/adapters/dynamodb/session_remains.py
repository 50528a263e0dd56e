"""What an expired session left in the session table, found and deleted for the audit (A4).

The held items are the session's tool-call records (``tool#<ISO8601>#<toolCallId>``: the call's
start time is in its key, so no item is read), idempotency markers (``toolcall#<id>``) and
context items (``ctx#<ISO8601>#<id>``, D1 as amended: they carry no ttl of their own, the
session's slides with every call).
Deletes are BatchWriteItem chunks, unprocessed items resent with backoff; a delete of an item
already gone is a no-op, so a redelivered expiry may run this again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.application.audit.ports import CleanupIncomplete, HeldItems

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

HELD_PREFIXES = (ts.TOOL_RECORD_PREFIX, ts.TOOL_CALL_MARKER_PREFIX, ts.CONTEXT_ITEM_PREFIX)
BATCH_DELETE_MAX = 25  # BatchWriteItem limit
DELETE_ATTEMPTS = 5


class SessionRemains:
    """The audit's :class:`~mcp_platform.application.audit.ports.SessionRemains`; ``dynamodb``
    is the plain client, never DAX (the reads are consistent, X4)."""

    def __init__(
        self, dynamodb: DynamoDBClient, session_table: str, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._dynamodb = dynamodb
        self._table = session_table
        self._sleep = sleep

    def held(self, session_id: str) -> HeldItems:
        sks = list(self._held_sks(ts.session_pk(session_id)))
        # tool#<ISO8601>#<toolCallId>: the start time of each call is in its key (no item read).
        records = [sk[len(ts.TOOL_RECORD_PREFIX) :] for sk in sks if sk.startswith(ts.TOOL_RECORD_PREFIX)]
        starts = [rest.split("#", 1)[0] for rest in records]
        return HeldItems(keys=tuple(sks), tool_call_starts=tuple(starts))

    def _held_sks(self, pk: str) -> Iterator[str]:
        # ConsistentRead (X4): what is left to revoke must not come from a stale view.
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": ts.PK, "#sk": ts.SK},
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "ProjectionExpression": "#pk, #sk",
            "ConsistentRead": True,
        }
        while True:
            page = self._dynamodb.query(**request)
            for item in page.get("Items", []):
                sk = item[ts.SK]["S"]
                if sk.startswith(HELD_PREFIXES):
                    yield sk
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def delete(self, session_id: str, keys: Sequence[str]) -> int:
        pk = ts.session_pk(session_id)
        for start in range(0, len(keys), BATCH_DELETE_MAX):
            chunk = keys[start : start + BATCH_DELETE_MAX]
            requests: Mapping[str, Any] = {
                self._table: [{"DeleteRequest": {"Key": {ts.PK: {"S": pk}, ts.SK: {"S": sk}}}} for sk in chunk]
            }
            for attempt in range(DELETE_ATTEMPTS):
                if attempt:
                    self._sleep(0.05 * 2 ** (attempt - 1))  # throttled: back off before resending
                requests = self._dynamodb.batch_write_item(RequestItems=requests).get("UnprocessedItems") or {}
                if not requests:
                    break
            else:
                left = sum(len(v) for v in requests.values())
                raise CleanupIncomplete(f"{left} held items of {pk} still unprocessed")
        return len(keys)
