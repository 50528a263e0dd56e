"""Emulated DynamoDB TTL: a sweeper that deletes expired items, and the identity of its deletes.

moto never expires TTL items, and its stream REMOVE records carry no ``userIdentity``. On AWS,
the TTL process deletes an item some time after its ttl (epoch seconds, D5) has passed, and
the stream record of that delete names the service:
``"userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"}`` — which is how
the audit function tells an expiry from an explicit delete (A4). Locally:

- :class:`TtlSweeper` scans a table every few seconds for items whose ttl is due and deletes
  each with a DeleteItem conditioned on the ttl it saw (an item refreshed in between, e.g. by
  sliding expiry D7, is not deleted, as AWS honours an update made before the deletion).
- :class:`TtlDeletions` remembers each deleted item (its old image, as DeleteItem returns it),
  and the table-stream poller asks it, for every REMOVE record, whether that record is one of
  the sweeper's; only those get the service ``userIdentity``. Explicit deletes keep none.

A delete and its registration happen under one lock that the poller's lookup also takes, so the
poller can never look at a sweeper's REMOVE record before it is registered. The lookup compares
the whole old image, so an earlier explicit delete of the same key is never taken for it.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from local.worker import BackgroundWorker

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

logger = logging.getLogger(__name__)
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
DEFAULT_SWEEP_INTERVAL_S = 5.0
ERROR_BACKOFF_S = 2.0
# A sweep scans the whole table, and the emulator (serving one request at a time) pages a Scan at
# a cost that grows faster than the table: on a table with 10,000 items one sweep took seconds.
# Waiting at least this many times a sweep's duration keeps the sweeper's share of the
# emulator's time under 10% however large the table grows (deletes come later, as on AWS).
SWEEP_SHARE_FACTOR = 10
# DynamoDB's TTL does not delete an item whose expiry is more than five years in the past (a
# documented rule); neither does the sweeper, so local behaviour matches.
MAX_PAST_S = 5 * 365 * 24 * 3600

Image = Mapping[str, Any]


class TtlDeletions:
    """The sweeper's deletes whose REMOVE record the stream poller has not delivered yet."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owed: list[Image] = []
        # SequenceNumbers of the REMOVE records already marked: a poller re-reads a batch after a
        # failed poll, and the re-read must carry the same identity.
        self._marked: set[str] = set()

    def delete(self, delete_item: Callable[[], Image | None]) -> bool:
        """Runs ``delete_item`` (the deleted item's image, or None if nothing was deleted) and
        registers the delete, with no lookup in between."""
        with self._lock:
            deleted = delete_item()
            if deleted is None:
                return False
            self._owed.append(deleted)
            return True

    def mark(self, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """The GetRecords record as AWS would deliver it: with the TTL identity if it is the
        REMOVE of one of the sweeper's deletes (each delete claims one record, once)."""
        if record.get("eventName") != "REMOVE" or "userIdentity" in record:
            return record
        change = record["dynamodb"]
        with self._lock:
            if change["SequenceNumber"] not in self._marked:
                old_image = change.get("OldImage")
                if old_image is None or old_image not in self._owed:
                    return record
                self._owed.remove(old_image)
                self._marked.add(change["SequenceNumber"])
        return {**record, "userIdentity": dict(TTL_IDENTITY)}

    @property
    def owed(self) -> int:
        with self._lock:
            return len(self._owed)


class TtlSweeper(BackgroundWorker):
    """Deletes one table's expired items every ``interval_s`` seconds, in a thread."""

    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table_name: str,
        ttl_attribute: str,
        key_attributes: tuple[str, ...],
        deletions: TtlDeletions,
        *,
        interval_s: float = DEFAULT_SWEEP_INTERVAL_S,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("the sweep interval must be positive")
        self.table_name = table_name
        self.interval_s = interval_s
        self._ddb = dynamodb
        self._ttl = ttl_attribute
        self._keys = key_attributes
        self._deletions = deletions
        self._stop = stop or threading.Event()
        self._clock = clock
        super().__init__(f"ttl-sweeper-{table_name}")

    def sweep_once(self) -> int:
        """Deletes every item whose ttl is due now; returns how many this pass deleted."""
        now = int(self._clock())
        deleted = 0
        for key, seen_ttl in self._due(now):
            if self._deletions.delete(functools.partial(self._delete, key, seen_ttl)):
                deleted += 1
        if deleted:
            logger.info("TTL sweeper: %d expired item(s) deleted from %s", deleted, self.table_name)
        return deleted

    def _due(self, now: int) -> list[tuple[dict[str, AttributeValueTypeDef], AttributeValueTypeDef]]:
        names = {f"#k{i}": name for i, name in enumerate(self._keys)} | {"#ttl": self._ttl}
        request: dict[str, Any] = {
            "TableName": self.table_name,
            # A ttl that is not a Number never expires (as on AWS). The type test comes first
            # because moto raises, instead of answering false, when it compares a String with a
            # Number, and a stray String ttl would otherwise stop every sweep.
            "FilterExpression": "attribute_type(#ttl, :number) AND #ttl BETWEEN :oldest AND :now",
            "ProjectionExpression": ", ".join(names),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {
                ":number": {"S": "N"},
                ":oldest": {"N": str(now - MAX_PAST_S)},
                ":now": {"N": str(now)},
            },
            "ConsistentRead": True,
        }
        due = []
        while True:
            page = self._ddb.scan(**request)
            for item in page.get("Items", []):
                ttl = item.get(self._ttl, {})
                if "N" in ttl:
                    due.append(({name: item[name] for name in self._keys}, ttl))
            if "LastEvaluatedKey" not in page:
                return due
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _delete(self, key: dict[str, AttributeValueTypeDef], seen_ttl: AttributeValueTypeDef) -> Image | None:
        try:
            response = self._ddb.delete_item(
                TableName=self.table_name,
                Key=key,
                ConditionExpression="#ttl = :seen",
                ExpressionAttributeNames={"#ttl": self._ttl},
                ExpressionAttributeValues={":seen": seen_ttl},
                ReturnValues="ALL_OLD",
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return None  # refreshed or deleted since the scan: not expired any more
            raise
        attributes: Image | None = response.get("Attributes")
        return attributes

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                self.sweep_once()
                wait = max(self.interval_s, SWEEP_SHARE_FACTOR * (time.monotonic() - began))
            except Exception:
                if self._stop.is_set():
                    break  # the emulator is going down with us
                logger.exception("TTL sweeper of %s failed; next pass in %.0f s", self.table_name, ERROR_BACKOFF_S)
                wait = ERROR_BACKOFF_S
            self._stop.wait(wait)
