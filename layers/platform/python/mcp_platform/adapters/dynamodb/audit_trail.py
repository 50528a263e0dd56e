"""A session's audit trail read back from the audit table, a page at a time (A3).

The :class:`~mcp_platform.application.audit.trail.AuditTrailReader` of the ``session_audit``
tool. The cursor is opaque to callers and bound to the session it was issued for (it carries
the last sort key read, checked to be one this trail issues), so it cannot be replayed against
another session's partition. Stored images (native maps, or DynamoDB-JSON text) are returned as
plain JSON; a diff the item does not store is recomputed from its images (``to_record``).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import TYPE_CHECKING, Any

from mcp_platform.adapters.dynamodb import audit_writer as w
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.stream_images import diff_stream_images, image_to_plain
from mcp_platform.application.audit.diff import dumps
from mcp_platform.application.audit.images import WireImage
from mcp_platform.application.audit.trail import DEFAULT_LIMIT, MAX_LIMIT, InvalidCursor, TrailPage

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_TRAIL_SK = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z#\d{40,64}")  # ts.audit_sk: 40-digit padding


def _encode_cursor(session_id: str, sk: str) -> str:
    raw = json.dumps({"s": session_id, "k": sk}, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode_cursor(session_id: str, cursor: str) -> str:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        decoded = json.loads(raw)
    except (binascii.Error, ValueError) as exc:
        raise InvalidCursor("malformed cursor") from exc
    if not isinstance(decoded, dict) or decoded.get("s") != session_id or not isinstance(decoded.get("k"), str):
        raise InvalidCursor("cursor does not belong to this session")
    sk: str = decoded["k"]
    # Only a key this trail issued (``ts.audit_sk``): anything else, of any length, would reach
    # DynamoDB as ExclusiveStartKey (real DynamoDB refuses sort keys over 1,024 bytes: a 5xx).
    if _TRAIL_SK.fullmatch(sk) is None:
        raise InvalidCursor("malformed cursor")
    return sk


def _plain_image(verbatim: WireImage | None, summary: dict[str, Any] | None) -> Any:
    if summary is not None:
        # The image was too large and was kept as a summary; its small scalars are made plain.
        return {**summary, "kept": json.loads(dumps(image_to_plain(summary["kept"])))}
    if verbatim is None:
        return None
    # DynamoDB JSON -> plain, with Decimals made JSON-safe the same way the diff is.
    return json.loads(dumps(image_to_plain(verbatim)))


def _stored(item: dict[str, Any], name: str, fact: str, known: dict[str, Any]) -> Any:
    """An attribute as stored, or given back by the rest of the item when it was not stored."""
    if name not in item:
        return known[fact]
    return next(iter(item[name].values())) if "NULL" not in item[name] else None


def to_record(item: dict[str, Any]) -> dict[str, Any]:
    """An audit item as the JSON-safe dict callers see, whichever layout wrote it: what it
    stores is used as stored; what it does not (the diff, the facts its key and images give
    back) is recomputed the way it was left out (:mod:`.audit_writer`)."""
    old, old_summary = w.stored_image(item.get(w.OLD_IMAGE))
    new, new_summary = w.stored_image(item.get(w.NEW_IMAGE))
    # A stored diff is used as stored; otherwise it is the images' (bounded as the writer would).
    stored_diff = item[w.DIFF]["S"] if w.DIFF in item else w.bounded_diff(diff_stream_images(old, new))
    known = w.derived(item)
    return {
        "sequence_number": _stored(item, w.SEQUENCE, "sequence_number", known),
        "change_time": _stored(item, w.CHANGE_TIME, "change_time", known),
        "event_name": item[w.EVENT_NAME]["S"],
        "item": _stored(item, w.ITEM_SK, "item", known),
        "who": {key: value["S"] for key, value in item[w.WHO]["M"].items()},
        "owner": _stored(item, w.OWNER, "owner", known),
        "ttl_expiry": _stored(item, w.TTL_EXPIRY, "ttl_expiry", known),
        "trace_id": item[ts.TRACE_ID]["S"] if ts.TRACE_ID in item else None,
        "diff": json.loads(stored_diff),
        "old_image": _plain_image(old, old_summary),
        "new_image": _plain_image(new, new_summary),
    }


class AuditTrail:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        if not table_name:
            raise ValueError("audit table name is required")
        self._client = client
        self._table = table_name

    def session_trail(self, session_id: str, *, limit: int = DEFAULT_LIMIT, cursor: str | None = None) -> TrailPage:
        """One page of the session's audit records, oldest first; ``next_cursor`` None at the end."""
        if not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_LIMIT}")
        pk = ts.session_pk(session_id)
        request: dict[str, Any] = {
            "TableName": self._table,
            # sk < "summary": every trail key starts with the ISO year, the summary item does not.
            "KeyConditionExpression": "#pk = :pk AND #sk < :summary",
            "ExpressionAttributeNames": {"#pk": ts.AUDIT_PK, "#sk": ts.AUDIT_SK},
            "ExpressionAttributeValues": {":pk": {"S": pk}, ":summary": {"S": ts.AUDIT_SUMMARY_SK}},
            "ScanIndexForward": True,
            # One extra item tells whether another page exists, so the last page has no cursor.
            "Limit": limit + 1,
        }
        if cursor is not None:
            request["ExclusiveStartKey"] = {
                ts.AUDIT_PK: {"S": pk},
                ts.AUDIT_SK: {"S": _decode_cursor(session_id, cursor)},
            }
        items: list[dict[str, Any]] = []
        while len(items) <= limit:
            response = self._client.query(**request)
            items.extend(response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                break
            # A 1 MB response page can stop short of Limit: keep reading until the page is full.
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
            request["Limit"] = limit + 1 - len(items)
        page, more = items[:limit], len(items) > limit
        next_cursor = _encode_cursor(session_id, page[-1][ts.AUDIT_SK]["S"]) if more and page else None
        return TrailPage([to_record(item) for item in page], next_cursor)

    def tenant_sessions(self, tenant: str) -> list[str]:
        """The sessions of ``tenant``'s callers that have audit records, in the order of their
        first change (the tenant index: one entry per change of a session's metadata)."""
        pages = self._client.get_paginator("query").paginate(
            TableName=self._table,
            IndexName=ts.AUDIT_TENANT_INDEX,
            KeyConditionExpression="#tenant = :tenant",
            ExpressionAttributeNames={"#tenant": ts.AUDIT_TENANT},
            ExpressionAttributeValues={":tenant": {"S": tenant}},
        )
        keys = (item[ts.AUDIT_PK]["S"] for page in pages for item in page["Items"])
        return list(dict.fromkeys(ts.session_id_from_pk(pk) for pk in keys))

    def session_summary(self, session_id: str) -> dict[str, Any] | None:
        """The summary written when the session expired by TTL, if it did."""
        return w.AuditWriter(self._client, self._table).get_summary(session_id)
