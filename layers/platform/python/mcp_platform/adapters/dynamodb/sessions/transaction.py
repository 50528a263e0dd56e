"""TransactWriteItems with the D10 policy: limits checked first, only conflicts retried.

A ConditionalCheckFailed cancellation is never retried: it is returned to the caller as
:class:`ConditionFailed` carrying the normalised CancellationReasons, so the caller can say
which condition failed. Everything else propagates as a typed error or the original one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from mcp_platform.adapters.dynamodb.aws_errors import (
    CONDITIONAL_CHECK_FAILED,
    THROTTLING_CODES,
    TRANSACTION_CONFLICT,
    cancellation_reasons,
    error_code,
)
from mcp_platform.adapters.dynamodb.codec import item_size
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.application.sessions.errors import (
    CancellationReason,
    StoreThrottled,
    TransactionConflict,
    TransactionFailed,
    TransactionTooLarge,
)
from mcp_platform.application.sessions.retry import Backoff
from mcp_platform.protocol import compact_json

MAX_ACTIONS = 100
MAX_BYTES = 4 * 1024 * 1024
MAX_TOKEN_LENGTH = 36
_RETRYABLE_CODES = {"TransactionConflictException", "TransactionInProgressException"}


class ConditionFailed(Exception):
    """Internal: the transaction was cancelled because at least one condition failed."""

    def __init__(self, reasons: Sequence[CancellationReason]) -> None:
        super().__init__("condition failed")
        self.reasons = list(reasons)

    def failed(self) -> list[CancellationReason]:
        return [r for r in self.reasons if r.code == CONDITIONAL_CHECK_FAILED]


class TokenMismatch(Exception):
    """Internal: IdempotentParameterMismatch, the token was used with other parameters."""


def client_request_token(tool_call_id: str, actions: Sequence[dict[str, Any]]) -> str:
    """A 36-char token from the tool call id *and* the transaction's content (D10).

    DynamoDB answers a token reused with different content within 10 minutes with
    IdempotentParameterMismatch; a commit rebuilt after a conflict carries a new version,
    time and context, so it must get a new token, while an identical resend (a retry of the
    same request) keeps its token and stays idempotent. Exactly-once per call id is the
    marker's ``attribute_not_exists``, not the token."""
    if not tool_call_id:
        raise ValueError("tool call id is required")
    content = compact_json.canonical(actions)
    return hashlib.sha256(f"{tool_call_id}\x00{content}".encode()).hexdigest()[:MAX_TOKEN_LENGTH]


def estimated_size(actions: Sequence[dict[str, Any]], extra_bytes: int = 0) -> int:
    """Upper-bound-ish size: Put items, keys and expression values, plus ``extra_bytes``
    (the caller adds what an Update leaves in place, e.g. the held metadata item)."""
    total = extra_bytes
    for action in actions:
        ((_, body),) = action.items()
        total += item_size(body.get("Item") or body.get("Key") or {})
        total += item_size(body.get("ExpressionAttributeValues") or {})
    return total


def check_limits(actions: Sequence[dict[str, Any]], extra_bytes: int = 0) -> None:
    size = estimated_size(actions, extra_bytes)
    if len(actions) > MAX_ACTIONS or size > MAX_BYTES:
        raise TransactionTooLarge(len(actions), size, MAX_ACTIONS, MAX_BYTES)


def transact_write(gateway: DynamoGateway, actions: list[dict[str, Any]], token: str, backoff: Backoff) -> None:
    """Send once, retrying only TransactionConflict / TransactionInProgress (same token)."""
    attempts = 0
    for _ in backoff.attempts():
        attempts += 1
        try:
            gateway.call("transact_write_items", TransactItems=actions, ClientRequestToken=token)
            return
        except ClientError as exc:
            code = error_code(exc)
            if code in _RETRYABLE_CODES:
                continue
            if code == "IdempotentParameterMismatchException":
                raise TokenMismatch(str(exc)) from exc
            if code != "TransactionCanceledException":
                raise
            reasons = cancellation_reasons(exc)
            if any(r.code == CONDITIONAL_CHECK_FAILED for r in reasons):
                raise ConditionFailed(reasons) from exc
            if any(r.code == TRANSACTION_CONFLICT for r in reasons):
                continue
            if any(r.code in THROTTLING_CODES for r in reasons):
                raise StoreThrottled(f"transaction cancelled by throttling: {reasons}") from exc
            raise TransactionFailed(reasons) from exc
    raise TransactionConflict(attempts)
