"""The one place every DynamoDB call of the session store goes through, and is counted.

``data`` is the DAX client when DAX is on (X3), else the plain DynamoDB client; ``control``
is always the plain client, for what DAX lacks (table operations, PartiQL; X3).
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.aws_errors import THROTTLING_CODES, error_code
from mcp_platform.application.sessions.errors import StoreThrottled, StoreUnavailable

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# DynamoDB's 5xx error codes (its documentation's "Errors": 500 and 503).
SERVER_ERROR_CODES = frozenset({"InternalServerError", "InternalFailure", "ServiceUnavailable"})


class DynamoGateway:
    def __init__(self, data: DynamoDBClient, control: DynamoDBClient | None = None) -> None:
        self._data = data
        self._control = control if control is not None else data
        self._calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def call(self, operation: str, **params: Any) -> dict[str, Any]:
        """Run a data-plane operation (``get_item``, ``transact_write_items``, ...). A request
        still throttled after the client's own retries (botocore backs off with jitter)
        becomes :class:`StoreThrottled`; one DynamoDB failed (5xx) or that never reached it,
        :class:`StoreUnavailable`: callers answer both "retry later". DynamoDB's answers (a
        failed condition, a cancelled transaction, a validation error) stay ``ClientError``,
        for the caller that asked to read them."""
        self._count(operation)
        with _unavailable_as_port_error(operation):
            response: dict[str, Any] = getattr(self._data, operation)(**params)
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
        with _unavailable_as_port_error(operation):
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


@contextlib.contextmanager
def _unavailable_as_port_error(operation: str) -> Iterator[None]:
    try:
        yield
    except ClientError as exc:
        code = error_code(exc)
        if code in THROTTLING_CODES:
            raise StoreThrottled(f"{operation} throttled: {code}") from exc
        if _status(exc) >= 500:
            raise StoreUnavailable(f"{operation} failed: {code or 'HTTP ' + str(_status(exc))}") from exc
        raise
    except BotoCoreError as exc:  # never reached DynamoDB (connection, timeout, credentials)
        raise StoreUnavailable(f"{operation} failed: {type(exc).__name__}") from exc


def _status(exc: ClientError) -> int:
    """The HTTP status of the error's response; 500 for a 5xx code without one (DAX's errors,
    errors built by hand)."""
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if isinstance(status, int):
        return status
    return 500 if error_code(exc) in SERVER_ERROR_CODES else 400
