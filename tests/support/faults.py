"""Faults moto never produces, injected with botocore event hooks on one client."""

from __future__ import annotations

import random
import threading
from typing import Any

from botocore.exceptions import ClientError


class TransactionConflicts:
    """Cancels a share (``rate``) of a DynamoDB client's TransactWriteItems with
    ``TransactionConflict``, as DynamoDB does when another transaction is writing one of the
    items. Seeded, so a run is repeatable; ``injected`` counts the cancellations."""

    def __init__(self, client: Any, rate: float, seed: int = 7) -> None:
        self.rate = rate
        self.injected = 0
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        client.meta.events.register("before-parameter-build.dynamodb.TransactWriteItems", self)

    def __call__(self, params: dict[str, Any], **_: Any) -> None:
        with self._lock:
            if self._random.random() >= self.rate:
                return
            self.injected += 1
        reasons = [{"Code": "None"} for _ in params["TransactItems"]]
        reasons[-1] = {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
        codes = ", ".join(r["Code"] for r in reasons)
        error = {
            "Error": {
                "Code": "TransactionCanceledException",
                "Message": f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
            },
            "CancellationReasons": reasons,
        }
        raise ClientError(error, "TransactWriteItems")  # type: ignore[arg-type]
