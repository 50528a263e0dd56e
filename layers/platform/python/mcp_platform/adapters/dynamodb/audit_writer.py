"""Writes audit records and session summaries to the audit table (A2, A3, A4).

Items are built in DynamoDB JSON for the low-level client (no serializer pass on the hot path).
Images are stored as DynamoDB-JSON text, exactly as the stream delivered them, so numbers, sets
and binary keep their types; the diff is stored as plain JSON text. Both are bounded so the
item stays under DynamoDB's 400 KB item limit whatever the session item looked like.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.conditional_writes import put_if_absent
from mcp_platform.application.audit.diff import ImageDiff, dumps, value_summary
from mcp_platform.application.audit.images import WireImage
from mcp_platform.application.audit.records import StreamChange
from mcp_platform.application.auth.tenants import tenant_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DEFAULT_RETENTION_SECONDS = 365 * 24 * 3600
IMAGE_LIMIT_BYTES = 100_000  # per image; larger images are summarised
DIFF_LIMIT_BYTES = 100_000
MAX_ITEM_BYTES = 400 * 1024
SMALL_SCALAR_BYTES = 256  # scalar attributes kept verbatim in an image summary
SUMMARY_MAX_ATTRIBUTES = 200
_ITEM_OVERHEAD_BYTES = 4096  # keys, names and the small attributes, with a wide margin

# audit item attribute names (the table's key names live in table_schema)
SEQUENCE = "seq"
EVENT_ID = "event_id"
EVENT_NAME = "event_name"
ITEM_SK = "item_sk"
CHANGE_TIME = "change_time"
WHO = "who"
TTL_EXPIRY = "ttl_expiry"
OLD_IMAGE = "old_image"
NEW_IMAGE = "new_image"
DIFF = "diff"
OWNER = "owner"  # copied from the image, so ownership can be checked after the session is gone
SUMMARY = "summary"
EVENT_PUBLISHED_AT = "event_published_at"


def summarise_image(image: WireImage, encoded: str) -> dict[str, Any]:
    """A bounded stand-in for an image too large to keep: small scalars verbatim, the rest sized."""
    kept: dict[str, Any] = {}
    sizes: dict[str, Any] = {}
    for name in sorted(image)[:SUMMARY_MAX_ATTRIBUTES]:
        value = image[name]
        kind = next(iter(value), "?")
        size = len(dumps(value))
        if kind in ("S", "N", "BOOL", "NULL") and size <= SMALL_SCALAR_BYTES:
            kept[name] = value
        else:
            sizes[name] = {"type": kind, "bytes": size}
    return {
        **value_summary(encoded, "image"),
        "attribute_count": len(image),
        "kept": kept,
        "sized": sizes,
    }


def _bounded_image(image: WireImage | None, limit: int) -> str | None:
    if image is None:
        return None
    encoded = dumps(image, canonical=False)
    if len(encoded) <= limit:
        return encoded
    return dumps(summarise_image(image, encoded))


def _bounded_diff(diff: ImageDiff, limit: int) -> str:
    encoded = dumps(diff.to_dict())
    if len(encoded) <= limit:
        return encoded
    # Keep which attributes changed (the question an auditor asks first), drop the values.
    names = {part: sorted(getattr(diff, part))[:SUMMARY_MAX_ATTRIBUTES] for part in ("added", "removed", "changed")}
    return dumps({**value_summary(encoded, "diff"), **names, "lists": diff.lists})


class AuditWriter:
    """Puts one audit item per stream record; a redelivered record is a silent success (A2).

    The audit's :class:`~mcp_platform.application.audit.ports.AuditLog`: the item layout (key,
    attribute names, the bounded image and diff texts) is decided here.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        *,
        retention_seconds: int = DEFAULT_RETENTION_SECONDS,
        image_limit: int = IMAGE_LIMIT_BYTES,
        diff_limit: int = DIFF_LIMIT_BYTES,
    ) -> None:
        if not table_name:
            raise ValueError("audit table name is required")
        if retention_seconds <= 0:
            raise ValueError("retention_seconds must be positive")
        if 2 * image_limit + diff_limit + _ITEM_OVERHEAD_BYTES > MAX_ITEM_BYTES:
            raise ValueError("image and diff limits would allow items over 400 KB")
        self._client = client
        self.table_name = table_name
        self.retention_seconds = retention_seconds
        self._image_limit = image_limit
        self._diff_limit = diff_limit

    def expires_at(self, change_epoch: float) -> int:
        # Counted from the change, not from processing, so a redelivery builds the same item.
        return int(change_epoch) + self.retention_seconds

    def build_item(self, change: StreamChange, diff: ImageDiff) -> dict[str, Any]:
        """The audit item for one change (pure CPU: this is what the benchmark measures)."""
        change_time = change.change_time_iso
        item: dict[str, Any] = {
            ts.AUDIT_PK: {"S": change.pk},
            ts.AUDIT_SK: {"S": ts.audit_sk(change_time, change.sequence_number)},
            SEQUENCE: {"S": change.sequence_number},
            EVENT_ID: {"S": change.event_id},
            EVENT_NAME: {"S": change.event_name},
            ITEM_SK: {"S": change.sk},
            CHANGE_TIME: {"S": change_time},
            WHO: {"M": {key: {"S": value} for key, value in change.who.items()}},
            TTL_EXPIRY: {"BOOL": change.is_ttl_removal},
            DIFF: {"S": _bounded_diff(diff, self._diff_limit)},
            ts.AUDIT_TTL: {"N": str(self.expires_at(change.change_epoch))},
        }
        if change.trace_id is not None and change.span_id is not None:
            # Top-level attributes: a trace id finds the audit records of its changes (A3's
            # Query by session, then a filter; or a Scan filter where the session is unknown).
            item[ts.TRACE_ID] = {"S": change.trace_id}
            item[ts.SPAN_ID] = {"S": change.span_id}
        image = change.new_image or change.old_image or {}
        owner = image.get(ts.OWNER)
        if owner is not None and "S" in owner:
            item[OWNER] = {"S": owner["S"]}
            tenant = tenant_of(owner["S"])
            if tenant is not None:  # the key of the sparse tenant index: a tenant's sessions
                item[ts.AUDIT_TENANT] = {"S": tenant}
        old = _bounded_image(change.old_image, self._image_limit)
        if old is not None:
            item[OLD_IMAGE] = {"S": old}
        new = _bounded_image(change.new_image, self._image_limit)
        if new is not None:
            item[NEW_IMAGE] = {"S": new}
        return item

    def record(self, change: StreamChange, diff: ImageDiff) -> bool:
        """True if written, False if this change was already audited (duplicate delivery)."""
        return self.put(self.build_item(change, diff))

    def put(self, item: Mapping[str, Any]) -> bool:
        """True if written, False if this record was already audited (duplicate delivery)."""
        return self._put_new(item)

    def put_summary(
        self, session_id: str, summary: Mapping[str, Any], change_epoch: float
    ) -> tuple[dict[str, Any], bool]:
        """Write the session summary once (A4): (the stored summary, whether this call wrote it).

        The first write wins; a redelivery gets the stored one back, with ``event_published``.
        """
        item = {
            ts.AUDIT_PK: {"S": ts.session_pk(session_id)},
            ts.AUDIT_SK: {"S": ts.AUDIT_SUMMARY_SK},
            SUMMARY: {"S": dumps(summary)},
            ts.AUDIT_TTL: {"N": str(self.expires_at(change_epoch))},
        }
        if summary.get("tenant"):
            item[ts.AUDIT_TENANT] = {"S": summary["tenant"]}
        if self._put_new(item):
            return {**summary, "event_published": False}, True
        stored = self.get_summary(session_id)
        if stored is None:
            raise RuntimeError(f"summary of session {session_id} exists but cannot be read back")
        return stored, False

    def get_summary(self, session_id: str) -> dict[str, Any] | None:
        response = self._client.get_item(
            TableName=self.table_name,
            Key={ts.AUDIT_PK: {"S": ts.session_pk(session_id)}, ts.AUDIT_SK: {"S": ts.AUDIT_SUMMARY_SK}},
            ConsistentRead=True,  # decides whether the expiry event is still owed
        )
        stored = response.get("Item")
        if stored is None:
            return None
        summary: dict[str, Any] = json.loads(stored[SUMMARY]["S"])
        summary["event_published"] = EVENT_PUBLISHED_AT in stored
        return summary

    def mark_event_published(self, session_id: str, published_at_iso: str) -> None:
        self._client.update_item(
            TableName=self.table_name,
            Key={ts.AUDIT_PK: {"S": ts.session_pk(session_id)}, ts.AUDIT_SK: {"S": ts.AUDIT_SUMMARY_SK}},
            UpdateExpression="SET #p = if_not_exists(#p, :t)",
            ConditionExpression="attribute_exists(#pk)",
            ExpressionAttributeNames={"#p": EVENT_PUBLISHED_AT, "#pk": ts.AUDIT_PK},
            ExpressionAttributeValues={":t": {"S": published_at_iso}},
        )

    def _put_new(self, item: Mapping[str, Any]) -> bool:
        return put_if_absent(self._client, self.table_name, dict(item), ts.AUDIT_PK)
