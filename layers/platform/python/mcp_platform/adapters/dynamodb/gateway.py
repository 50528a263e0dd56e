"""The one place every DynamoDB call of the session store goes through, and is counted.

``data`` is the DAX client when DAX is on (X3), else the plain DynamoDB client; ``control``
is always the plain client, for what DAX lacks (table operations, PartiQL; X3).
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from botocore.exceptions import ClientError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.aws_errors import THROTTLING_CODES, error_code
from mcp_platform.application.sessions.errors import StoreThrottled


class DynamoGateway:
    def __init__(self, data: Any, control: Any | None = None) -> None:
        self._data = data
        self._control = control if control is not None else data
        self._calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def call(self, operation: str, **params: Any) -> dict[str, Any]:
        """Run a data-plane operation (``get_item``, ``transact_write_items``, ...). A request
        still throttled after the client's own retries (botocore backs off with jitter)
        becomes :class:`StoreThrottled`, which callers answer as "retry later"."""
        self._count(operation)
        try:
            response: dict[str, Any] = getattr(self._data, operation)(**params)
        except ClientError as exc:
            if error_code(exc) in THROTTLING_CODES:
                raise StoreThrottled(f"{operation} throttled: {error_code(exc)}") from exc
            raise
        return response

    def put_new(self, table_name: str, item: dict[str, Any]) -> bool:
        """One PutItem conditioned on ``attribute_not_exists(pk)``: False when an item with that
        key exists already (DynamoDB decides, so of two concurrent writers exactly one wins)."""
        try:
            self.call(
                "put_item",
                TableName=table_name,
                Item=item,
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": ts.PK},
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            return False
        return True

    def control(self, operation: str, **params: Any) -> dict[str, Any]:
        """Run an operation DAX does not offer, on the plain client."""
        self._count(operation)
        response: dict[str, Any] = getattr(self._control, operation)(**params)
        return response

    @property
    def calls(self) -> Counter[str]:
        """AWS calls made so far, per operation name (a copy)."""
        with self._lock:
            return Counter(self._calls)

    @property
    def total_calls(self) -> int:
        with self._lock:
            return sum(self._calls.values())

    def reset_counts(self) -> None:
        with self._lock:
            self._calls.clear()

    def _count(self, operation: str) -> None:
        with self._lock:
            self._calls[operation] += 1
