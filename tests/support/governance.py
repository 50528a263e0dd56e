"""Rate-limit counters in memory: shared by instances, the semantics the DynamoDB counters keep;
one per instance, the naive per-process limiter the cross-instance tests are shown to catch."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.application.governance.ports import PeriodCalls, WindowHit


class InMemoryRateCounters:
    """All or none, as the port promises; one lock for every window."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str, int]] = Counter()
        self._lock = threading.Lock()

    def take(self, hits: Sequence[WindowHit]) -> WindowHit | None:
        with self._lock:
            keys = [(hit.rule.key, hit.subject, hit.window_start) for hit in hits]
            for hit, key in zip(hits, keys, strict=True):
                if self.counts[key] >= hit.rule.limit:
                    return hit
            self.counts.update(keys)
            return None


class FixedUsage:
    """Usage totals an operator would see: what ``calls`` answers, per subject."""

    def __init__(self, **calls: PeriodCalls) -> None:
        self.calls_by_subject = calls
        self.reads: list[tuple[str, str, str]] = []

    def calls(self, subject: str, *, month: str, day: str) -> PeriodCalls:
        self.reads.append((subject, month, day))
        return self.calls_by_subject.get(subject, PeriodCalls(day=0, month=0))


def limits_table_definition(table_name: str) -> dict[str, Any]:
    """CreateTable parameters of the rate-limit counters' table (stacks/governance.py)."""
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": ts.PK, "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": ts.PK, "AttributeType": "S"}],
        "SSESpecification": {"Enabled": True},
    }


def create_limits_table(client: Any, table_name: str) -> None:
    client.create_table(**limits_table_definition(table_name))
    client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1})
    client.update_time_to_live(TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": ts.TTL})
