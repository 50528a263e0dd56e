"""Reading DynamoDB errors in both shapes: boto3's ClientError and the DAX client's.

boto3 puts the code in ``e.response["Error"]["Code"]`` and the reasons of a cancelled
transaction in ``e.response["CancellationReasons"]``; the DAX client raises a ClientError
subclass with the same ``response["Error"]`` but carries the reasons in
``e.cancellation_reasons``. Both messages end in ``[None, ConditionalCheckFailed, ...]``,
the last fallback.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from mcp_platform.application.sessions.errors import CancellationReason, StoreThrottled

CONDITIONAL_CHECK_FAILED = "ConditionalCheckFailed"
TRANSACTION_CONFLICT = "TransactionConflict"
# Error codes of a throttled request (after the client's own retries), and the cancellation
# reason DynamoDB gives a transaction cancelled by throttling.
THROTTLING_CODES = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "ThrottlingError"}
)
_REASONS_IN_MESSAGE = re.compile(r"\[([^\[\]]*)\]\s*$")


def error_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        code = response.get("Error", {}).get("Code")
        if code:
            return str(code)
    return str(getattr(exc, "code", "") or "")


def is_throttle(exc: BaseException) -> bool:
    """Whether ``exc`` is a throttled AWS call: the store's own StoreThrottled, or an SDK error
    (boto3 or DAX) with a throttling code. The use cases get this classifier injected."""
    return isinstance(exc, StoreThrottled) or (isinstance(exc, ClientError) and error_code(exc) in THROTTLING_CODES)


def old_item(exc: BaseException) -> dict[str, Any] | None:
    """The item returned by ReturnValuesOnConditionCheckFailure=ALL_OLD, if any."""
    response = getattr(exc, "response", None)
    item = response.get("Item") if isinstance(response, Mapping) else None
    return dict(item) if item else None


def cancellation_reasons(exc: BaseException) -> list[CancellationReason]:
    response = getattr(exc, "response", None)
    raw: Any = response.get("CancellationReasons") if isinstance(response, Mapping) else None
    if not raw:
        raw = getattr(exc, "cancellation_reasons", None)
    if raw:
        return [_reason(i, r) for i, r in enumerate(raw)]
    message = response.get("Error", {}).get("Message", "") if isinstance(response, Mapping) else str(exc)
    match = _REASONS_IN_MESSAGE.search(str(message))
    if not match:
        return []
    return [_reason(i, part.strip()) for i, part in enumerate(match.group(1).split(","))]


def _reason(index: int, raw: Any) -> CancellationReason:
    if isinstance(raw, Mapping):
        code = raw.get("Code") or raw.get("code") or "None"
        item = raw.get("Item") or raw.get("item")
        return CancellationReason(
            index, _normalise(str(code)), str(raw.get("Message") or raw.get("message") or ""), item or None
        )
    return CancellationReason(index, _normalise(str(raw) if raw is not None else "None"))


def _normalise(code: str) -> str:
    return code.removesuffix("Exception") if code.endswith("Exception") else code
