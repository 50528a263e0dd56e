"""The rate limits' window counters (``RateCounters``) and the quota totals (``UsageTotals``).

A counter is one item of the limits table per rule, subject and window, its ``n`` ADDed by an
UpdateItem whose condition is the limit (``attribute_not_exists(n) OR n < :limit``): DynamoDB
decides, so however many instances count at once, a window admits at most ``limit``. A request
under several rules counts them in one TransactWriteItems, all or none; a cancellation's
reasons say which window was full. The item expires (ttl) a minute after its window ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.aws_errors import error_code
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.adapters.dynamodb.transact import CONDITION_FAILED, transact_write
from mcp_platform.application.governance.ports import CountersUnavailable, PeriodCalls, WindowHit
from mcp_platform.application.sessions.errors import SessionStoreError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef, UpdateTypeDef

EXPIRY_MARGIN_SECONDS = 60
CONFLICT_RETRIES = 3


class DynamoRateCounters:
    """``client``: the plain DynamoDB client (the conditions are DynamoDB's to decide, not a cache's)."""

    def __init__(self, client: DynamoDBClient, table_name: str, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self._client = client
        self._table = table_name
        self._sleep = sleep

    def take(self, hits: Sequence[WindowHit]) -> WindowHit | None:
        updates = [self._update(hit) for hit in hits]
        try:
            if len(updates) == 1:
                return self._take_one(updates[0], hits[0])
            # TransactionConflict (another request counting in one of these windows at the same
            # moment) is retried with D10's backoff; a failed condition names the full window.
            items: list[TransactWriteItemTypeDef] = [{"Update": update} for update in updates]
            reasons = transact_write(self._client, items, max_conflict_retries=CONFLICT_RETRIES, sleep=self._sleep)
        except (ClientError, BotoCoreError) as exc:
            raise CountersUnavailable(f"rate-limit counters unavailable: {error_code(exc) or exc}") from exc
        return hits[reasons.index(CONDITION_FAILED)] if reasons else None

    def _take_one(self, update: UpdateTypeDef, hit: WindowHit) -> WindowHit | None:
        try:
            self._client.update_item(**update)
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                return hit
            raise
        return None

    def _update(self, hit: WindowHit) -> UpdateTypeDef:
        pk = ts.rate_window_pk(hit.rule.key, hit.rule.period, hit.window_start, hit.subject)
        return {
            "TableName": self._table,
            "Key": {ts.PK: {"S": pk}},
            "UpdateExpression": "ADD #n :one SET #ttl = if_not_exists(#ttl, :ttl)",
            "ConditionExpression": "attribute_not_exists(#n) OR #n < :limit",
            "ExpressionAttributeNames": {"#n": ts.RATE_COUNT, "#ttl": ts.TTL},
            "ExpressionAttributeValues": {
                ":one": {"N": "1"},
                ":limit": {"N": str(hit.rule.limit)},
                ":ttl": {"N": str(hit.window_end + EXPIRY_MARGIN_SECONDS)},  # epoch seconds (D5)
            },
        }


class DynamoUsageTotals:
    """Reads the quota totals ingest keeps in the session table, through the store's gateway:
    with DAX on, the item cache may answer (X6: a quota is a soft bound, see admission)."""

    def __init__(self, gateway: DynamoGateway, table_name: str) -> None:
        self._gateway = gateway
        self._table = table_name

    def calls(self, subject: str, *, month: str, day: str) -> PeriodCalls:
        day_attribute = ts.usage_day_attribute(day)
        try:
            response = self._gateway.call(
                "get_item",
                TableName=self._table,
                Key={ts.PK: {"S": ts.usage_pk(subject)}, ts.SK: {"S": ts.usage_totals_sk(month)}},
                ProjectionExpression="#c, #d",
                ExpressionAttributeNames={"#c": ts.USAGE_CALLS, "#d": day_attribute},
            )
        except (ClientError, BotoCoreError, SessionStoreError) as exc:
            raise CountersUnavailable(f"usage totals unavailable: {error_code(exc) or exc}") from exc
        item = response.get("Item", {})
        return PeriodCalls(day=_number(item, day_attribute), month=_number(item, ts.USAGE_CALLS))


def _number(item: dict[str, Any], name: str) -> int:
    value = item.get(name, {}).get("N")
    return int(value) if value is not None else 0
