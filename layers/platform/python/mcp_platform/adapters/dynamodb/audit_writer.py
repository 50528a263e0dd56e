"""Writes audit records and session summaries to the audit table (A2, A3, A4).

Items are built in DynamoDB JSON for the low-level client (no serializer pass on the hot path).
An audit item stores nothing twice (docs/operating/upgrades.md, "The audit item"):

* the images as the stream delivered them, each a native map attribute (M), or as DynamoDB-JSON
  text where a map would not keep it exactly (a set, whose order a map does not keep; binary;
  nesting near DynamoDB's 32 levels) or where it is too large and kept as a summary;
* the field-level diff only when it cannot be recomputed from the stored images (an image kept
  as a summary; a writer whose diff limit is not the trail's): the trail
  (:mod:`.audit_trail`) recomputes it with the same function otherwise;
* the sequence number, change time, changed item's key, owner and TTL flag only when the sort
  key, the images and ``who`` do not give them back exactly (:func:`derived`, which the trail
  reads them with).

Items written before this layout (images as text, the diff and every attribute stored) read as
they always did: whatever an item stores is used as stored. A writer built with
``previous_layout=True`` writes them so still: what the audit function writes while a release that
reads only that layout may still serve (``compatible_with``, docs/operating/upgrades.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.conditional_writes import put_if_absent
from mcp_platform.application.audit.diff import ImageDiff, dumps, value_summary
from mcp_platform.application.audit.images import WireImage, WireValue
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
NATIVE_MAX_DEPTH = 30  # image nesting kept as a map; deeper (the audit item adds a level) as text
_NOT_NATIVE = frozenset({"SS", "NS", "BS", "B"})  # sets (order not kept by a map), binary (base64 text here)
_TTL_WHO = {"type": ts.TTL_IDENTITY_TYPE, "principal_id": ts.TTL_PRINCIPAL}

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


def bounded_diff(diff: ImageDiff, limit: int = DIFF_LIMIT_BYTES) -> str:
    """The diff's stored text: whole within ``limit``, else a summary naming what changed."""
    encoded = dumps(diff.to_dict())
    if len(encoded) <= limit:
        return encoded
    # Keep which attributes changed (the question an auditor asks first), drop the values.
    names = {part: sorted(getattr(diff, part))[:SUMMARY_MAX_ATTRIBUTES] for part in ("added", "removed", "changed")}
    return dumps({**value_summary(encoded, "diff"), **names, "lists": diff.lists})


def _native_depth(value: WireValue, depth: int) -> int | None:
    """How deep ``value`` nests (maps and lists), or None if a map would not keep it exactly."""
    kind = next(iter(value), "?")
    if kind in _NOT_NATIVE:
        return None
    deepest = depth
    if kind == "M" or kind == "L":
        inner = value[kind]
        for nested in inner.values() if kind == "M" else inner:
            found = _native_depth(nested, depth + 1)
            if found is None:
                return None
            deepest = max(deepest, found)
    return deepest


def _stored_image(image: WireImage, limit: int) -> tuple[dict[str, Any], bool]:
    """The image's attribute value, and whether it is the image verbatim (not a summary)."""
    encoded = dumps(image, canonical=False)
    if len(encoded) > limit:
        return {"S": dumps(summarise_image(image, encoded))}, False
    for value in image.values():
        found = _native_depth(value, 1)
        if found is None or found > NATIVE_MAX_DEPTH:
            return {"S": encoded}, True
    return {"M": dict(image)}, True


def stored_image(value: Mapping[str, Any] | None) -> tuple[WireImage | None, dict[str, Any] | None]:
    """An image attribute as stored: (the image verbatim, None), or (None, its summary) when it
    was too large; (None, None) when the item has none."""
    if value is None:
        return None, None
    if "M" in value:
        return value["M"], None
    stored = json.loads(value["S"])
    if isinstance(stored.get("_summary"), str):
        return None, stored
    return stored, None


def _owner(image: Mapping[str, Any]) -> str | None:
    owner = image.get(ts.OWNER)
    return owner["S"] if isinstance(owner, Mapping) and isinstance(owner.get("S"), str) else None


def _key_of(image: Mapping[str, Any]) -> str | None:
    sk = image.get(ts.SK)
    return sk["S"] if isinstance(sk, Mapping) and isinstance(sk.get("S"), str) else None


def _attribute(value: str | bool | None) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"BOOL": value}
    return {"NULL": True} if value is None else {"S": value}


def derived(item: Mapping[str, Any]) -> dict[str, Any]:
    """What an audit item gives back without storing it: the sequence number and change time
    (its sort key), the changed item's key and its owner (its images; a summary's kept
    scalars), whether it is a TTL removal (its event name and ``who``)."""
    change_time, _, padded = item[ts.AUDIT_SK]["S"].partition("#")
    images: list[Mapping[str, Any]] = []
    for name in (NEW_IMAGE, OLD_IMAGE):
        verbatim, summary = stored_image(item.get(name))
        if verbatim is not None:
            images.append(verbatim)
        elif summary is not None:
            images.append(summary.get("kept", {}))
    who = {key: value.get("S") for key, value in item[WHO]["M"].items()}
    keys = [key for key in (_key_of(image) for image in images) if key is not None]
    return {
        "sequence_number": padded.lstrip("0") or "0",
        "change_time": change_time,
        "item": keys[0] if keys else None,
        "owner": _owner(images[0]) if images else None,
        "ttl_expiry": item[EVENT_NAME]["S"] == "REMOVE" and who == _TTL_WHO,
    }


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
        previous_layout: bool = False,
    ) -> None:
        """``previous_layout``: every item in the layout releases before this one read (the images
        as text, the diff and every attribute stored), not the one that stores nothing twice."""
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
        self.previous_layout = previous_layout

    def expires_at(self, change_epoch: float) -> int:
        # Counted from the change, not from processing, so a redelivery builds the same item.
        return int(change_epoch) + self.retention_seconds

    def build_item(self, change: StreamChange, diff: Callable[[], ImageDiff]) -> dict[str, Any]:
        """The audit item for one change (pure CPU: this is what the benchmark measures).

        ``diff`` computes the change's diff; it is called only when the diff must be stored."""
        sort_key = ts.audit_sk(change.change_time_iso, change.sequence_number)
        item: dict[str, Any] = {
            ts.AUDIT_PK: {"S": change.pk},
            ts.AUDIT_SK: {"S": sort_key},
            EVENT_ID: {"S": change.event_id},
            EVENT_NAME: {"S": change.event_name},
            WHO: {"M": {key: {"S": value} for key, value in change.who.items()}},
            ts.AUDIT_TTL: {"N": str(self.expires_at(change.change_epoch))},
        }
        if change.trace_id is not None and change.span_id is not None:
            # Top-level attributes: a trace id finds the audit records of its changes (A3's
            # Query by session, then a filter; or a Scan filter where the session is unknown).
            item[ts.TRACE_ID] = {"S": change.trace_id}
            item[ts.SPAN_ID] = {"S": change.span_id}
        owner = _owner(change.new_image or change.old_image or {})
        if owner is not None:
            tenant = tenant_of(owner)
            if tenant is not None:  # the key of the sparse tenant index: a tenant's sessions
                item[ts.AUDIT_TENANT] = {"S": tenant}
        if self.previous_layout:
            return {**item, **self._previous_layout_attributes(change, diff, owner)}
        exact = True
        for name, image in ((OLD_IMAGE, change.old_image), (NEW_IMAGE, change.new_image)):
            if image is not None:
                item[name], verbatim = _stored_image(image, self._image_limit)
                exact = exact and verbatim
        if not exact or self._diff_limit != DIFF_LIMIT_BYTES:
            # Not recomputable from what is stored (an image kept as a summary), or not bounded
            # as the trail bounds it: stored.
            item[DIFF] = {"S": bounded_diff(diff(), self._diff_limit)}
        known = derived(item)
        facts: tuple[tuple[str, str, str | bool | None], ...] = (
            ("sequence_number", SEQUENCE, change.sequence_number),
            ("change_time", CHANGE_TIME, change.change_time_iso),
            ("item", ITEM_SK, change.sk),
            ("owner", OWNER, owner),
            ("ttl_expiry", TTL_EXPIRY, change.is_ttl_removal),
        )
        for fact, name, value in facts:
            if known[fact] != value:  # what the item does not give back otherwise
                item[name] = _attribute(value)
        return item

    def _previous_layout_attributes(
        self, change: StreamChange, diff: Callable[[], ImageDiff], owner: str | None
    ) -> dict[str, Any]:
        """What an item of the previous layout stores besides the key, event, ``who``, ttl, trace
        and tenant: every fact, the diff, and the images as text."""
        stored: dict[str, Any] = {
            SEQUENCE: {"S": change.sequence_number},
            ITEM_SK: {"S": change.sk},
            CHANGE_TIME: {"S": change.change_time_iso},
            TTL_EXPIRY: {"BOOL": change.is_ttl_removal},
            DIFF: {"S": bounded_diff(diff(), self._diff_limit)},
        }
        if owner is not None:
            stored[OWNER] = {"S": owner}
        for name, image in ((OLD_IMAGE, change.old_image), (NEW_IMAGE, change.new_image)):
            text = _bounded_image(image, self._image_limit)
            if text is not None:
                stored[name] = {"S": text}
        return stored

    def record(self, change: StreamChange, diff: Callable[[], ImageDiff]) -> bool:
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
