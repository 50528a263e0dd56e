"""The notification log: resource updates and list changes, written by any instance.

Entries live in the session table (``table_schema``): ``pk=notify#<topic>``,
``sk=<ISO 8601 UTC, microseconds>#<8 random hex>``, so a topic's entries sort in time order and
a reader asks for "everything after the last sk I saw" with one Query; the random suffix keeps
two entries of one microsecond apart. Topics: ``lists`` holds every list change (rare, so one
partition every stream reads costs one Query per poll whatever it watches) and
``resource#<digest>`` one resource's updates for one audience (a stream reads only the resources
it watches): the digest of the URI for a resource that reads the same for every caller, of the
principal and the URI for one that does not (``table_schema.resource_topic``), so one
principal's updates of such a resource never reach another principal's stream.

An entry matters only until the open streams have polled past it (seconds) or a client resumes
a 2025 GET stream with ``Last-Event-ID``: it carries a ``ttl`` ``retention_seconds`` ahead, and
reads skip expired entries whether or not DynamoDB has deleted them yet (D6).
"""

from __future__ import annotations

import math
import re
import secrets
from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import from_attr, require_epoch_seconds, to_item
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.adapters.dynamodb.port_errors import translated
from mcp_platform.application.notifications.ports import (
    LIST_KINDS,
    RESOURCE,
    Notice,
    NotificationStoreError,
    check_uri,
)
from mcp_platform.protocol.clock import Clock, SystemClock, iso_utc

__all__ = ["LIST_KINDS", "RESOURCE", "Notice", "NotificationLog", "check_uri", "is_cursor"]
RETENTION_SECONDS = 900  # covers a reconnect after the 840 s stream cap (S7)
PAGE_ITEMS = 100
MAX_ITEMS_PER_READ = 500  # one poll's bound per topic; the rest comes with the next poll
_SK = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z#[0-9a-f]{8}")


def is_cursor(value: object) -> bool:
    """An sk this log wrote (a 2025 ``Last-Event-ID`` is one); anything else is not a cursor."""
    return isinstance(value, str) and _SK.fullmatch(value) is not None


class NotificationLog:
    """The notification log (``application.notifications.ports.NoticeLog``) in the session table."""

    def __init__(
        self,
        table_name: str,
        gateway: DynamoGateway,
        *,
        retention_seconds: int = RETENTION_SECONDS,
        clock: Clock | None = None,
    ) -> None:
        if retention_seconds <= 0:
            raise ValueError(f"retention_seconds must be positive, got {retention_seconds}")
        self.table_name = table_name
        self.gateway = gateway
        self.retention_seconds = retention_seconds
        self.clock: Clock = clock or SystemClock()

    @property
    def lists_topic(self) -> str:
        return ts.NOTIFY_TOPIC_LISTS

    def resource_topic(self, uri: str, audience: str) -> str:
        return ts.resource_topic(uri, audience)

    def is_cursor(self, value: object) -> bool:
        return is_cursor(value)

    def publish_resource_updated(self, uri: str, *, audience: str) -> Notice:
        """``audience``: "" (every subscriber) or the principal whose subscribers are told."""
        uri = check_uri(uri)
        return self._publish(ts.resource_topic(uri, audience), RESOURCE, uri)

    def publish_list_changed(self, kind: str) -> Notice:
        if kind not in LIST_KINDS:
            raise ValueError(f"kind must be one of {', '.join(LIST_KINDS)}, got {kind!r}")
        return self._publish(ts.NOTIFY_TOPIC_LISTS, kind, "")

    def _publish(self, topic: str, notice: str, uri: str) -> Notice:
        """One PutItem, no condition: the random suffix makes every sk new."""
        now = self.clock.now()
        entry = Notice(f"{iso_utc(now)}#{secrets.token_hex(4)}", notice, uri)
        item: dict[str, Any] = {
            ts.PK: ts.notify_pk(topic),
            ts.SK: entry.sk,
            ts.NOTICE_KIND: notice,
            ts.TTL: require_epoch_seconds(math.floor(now) + self.retention_seconds),
        }
        if uri:
            item[ts.URI] = uri
        with translated(NotificationStoreError, "notification put"):
            self.gateway.call("put_item", TableName=self.table_name, Item=to_item(item))
        return entry

    def cursor(self, epoch_seconds: float) -> str:
        """The lower bound for "entries written after this time": every sk of a later
        microsecond sorts above it, and so does every sk of that very microsecond."""
        return iso_utc(epoch_seconds)

    def oldest_cursor(self) -> str:
        """Nothing older than the retention is guaranteed to be there: resume no earlier."""
        return self.cursor(self.clock.now() - self.retention_seconds)

    def read(self, topic: str, after: str) -> list[Notice]:
        """Entries of ``topic`` with sk > ``after``, oldest first. Consistent (X4): the entry was
        just written by another instance, and DAX's query cache would hide it for a minute."""
        params: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "#pk = :pk AND #sk > :after",
            "ExpressionAttributeNames": {"#pk": ts.PK, "#sk": ts.SK},
            "ExpressionAttributeValues": to_item({":pk": ts.notify_pk(topic), ":after": after}),
            "ConsistentRead": True,
            "Limit": PAGE_ITEMS,
        }
        found: list[Notice] = []
        now = self.clock.now()
        while len(found) < MAX_ITEMS_PER_READ:
            with translated(NotificationStoreError, "notification query"):
                response = self.gateway.call("query", **params)
            for raw in response.get("Items", []):
                if int(from_attr(raw.get(ts.TTL, {"N": "0"}))) <= now:
                    continue  # expired (D6), whatever DynamoDB has deleted yet
                uri = from_attr(raw[ts.URI]) if ts.URI in raw else ""
                found.append(Notice(str(from_attr(raw[ts.SK])), str(from_attr(raw[ts.NOTICE_KIND])), str(uri)))
            if "LastEvaluatedKey" not in response:
                break
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return found
