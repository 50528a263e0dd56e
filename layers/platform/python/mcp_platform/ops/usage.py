"""A principal's usage: the per-day, per-tool counters ingest keeps, the quota totals, and a
reset of those totals (what lets a principal over its quota call again).

    python -m mcp_platform.ops [--stack NAME] usage show PRINCIPAL [--month YYYY-MM]
    python -m mcp_platform.ops [--stack NAME] usage reset PRINCIPAL [--day] --yes

A reset sets the quota totals of the current month to zero (``--day``: today's only); the
per-tool counters are the usage history and stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.application.governance.ports import PeriodCalls
from mcp_platform.protocol.clock import month_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class ToolDay:
    day: str
    tool: str
    calls: int
    errors: int


@dataclass(frozen=True)
class UsageReport:
    principal: str
    month: str
    days: list[ToolDay]
    totals: PeriodCalls
    """The quota totals for the month and today (zero when quotas are off: ingest keeps none)."""


class UsageCommands:
    def __init__(self, dynamodb: DynamoDBClient, table_name: str) -> None:
        self._ddb = dynamodb
        self._table = table_name

    def show(self, principal: str, *, month: str, today: str) -> UsageReport:
        days: list[ToolDay] = []
        totals = PeriodCalls(day=0, month=0)
        pages = self._ddb.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": ts.PK},
            ExpressionAttributeValues={":pk": {"S": ts.usage_pk(principal)}},
            ConsistentRead=True,
        )
        for item in (item for page in pages for item in page["Items"]):
            sk = item[ts.SK]["S"]
            if sk == ts.usage_totals_sk(month):
                today_calls = _count(item, ts.usage_day_attribute(today)) if today.startswith(month) else 0
                totals = PeriodCalls(day=today_calls, month=_count(item, ts.USAGE_CALLS))
            elif sk.startswith(month):
                day, _, tool = sk.partition("#")
                days.append(ToolDay(day, tool, _count(item, ts.USAGE_CALLS), _count(item, ts.USAGE_ERRORS)))
        return UsageReport(principal, month, days, totals)

    def reset(self, principal: str, *, today: str, day_only: bool) -> None:
        """Zeroes the quota totals of ``today``'s month (``day_only``: today's count only). The
        month keeps counting from zero; the per-tool counters are left as they are."""
        key = {ts.PK: {"S": ts.usage_pk(principal)}, ts.SK: {"S": ts.usage_totals_sk(month_of(today))}}
        if day_only:
            # The month total loses what today had counted, so both quotas see today's reset.
            day = ts.usage_day_attribute(today)
            item = self._ddb.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item", {})
            counted = _count(item, day)
            if counted:
                self._ddb.update_item(
                    TableName=self._table,
                    Key=key,
                    UpdateExpression="ADD #c :minus, #d :minus",
                    ExpressionAttributeNames={"#c": ts.USAGE_CALLS, "#d": day},
                    ExpressionAttributeValues={":minus": {"N": str(-counted)}},
                )
            return
        self._ddb.delete_item(TableName=self._table, Key=key)


def _count(item: dict[str, Any], name: str) -> int:
    value = item.get(name, {}).get("N")
    return int(value) if value is not None else 0
