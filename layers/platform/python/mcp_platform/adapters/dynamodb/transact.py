"""TransactWriteItems for the ingest function: conflicts retried, condition failures returned.

No ClientRequestToken: the ingest items carry processing-time values (the dedupe marker's
ttl, the ``:now`` of the session-alive check), so a redelivery within DynamoDB's 10-minute
token window would send other parameters under the same token and be refused with
IdempotentParameterMismatchException. The items' own ``attribute_not_exists`` conditions make
each write exactly-once instead.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

CONDITION_FAILED = "ConditionalCheckFailed"
CONFLICT = "TransactionConflict"


def transact_write(
    client: DynamoDBClient,
    items: Sequence[TransactWriteItemTypeDef],
    *,
    max_conflict_retries: int,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Commits ``items``; returns ``[]`` on success, else the per-action cancellation codes
    (``"None"`` where an action was fine) of a cancellation with a failed condition.

    A failed condition is an answer, not a fault, so it is returned and never retried; only
    TransactionConflict is retried (50 ms exponential backoff with jitter); anything else raises.
    """
    for attempt in range(max_conflict_retries + 1):
        try:
            client.transact_write_items(TransactItems=items)
            return []
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            reasons = [str(r.get("Code")) for r in exc.response.get("CancellationReasons", [])]
            cancelled = code == "TransactionCanceledException"
            if cancelled and CONDITION_FAILED in reasons:
                return reasons
            if not (cancelled and CONFLICT in reasons) or attempt == max_conflict_retries:
                raise
            sleep(0.05 * 2**attempt * (0.5 + random.random() / 2))
    raise AssertionError("unreachable")


def failed_at(reasons: list[str], index: int) -> bool:
    """Whether the action at ``index`` of a cancelled transaction failed its condition."""
    return len(reasons) > index and reasons[index] == CONDITION_FAILED
