"""The session table's DynamoDB stream, read for the audit: records, keys and images.

:func:`read_stream_change` turns one stream record (the plain mapping Lambda delivers,
``{"eventID", "eventName", "dynamodb": {...}}``, which is also what the local pollers build)
into the use case's :class:`~mcp_platform.application.audit.records.StreamChange`: the key
layout (which items are a session's, which one is its metadata) and who DynamoDB's TTL process
is are known here. :data:`STREAM_IMAGES` is the audit's
:class:`~mcp_platform.application.audit.ports.ImageCodec` for DynamoDB JSON.

boto3's deserializer is built on first use: importing boto3 costs the endpoint ~0.2 s of cold
start, and the endpoint reads audit trails (which decode stored images) without needing it at
start.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Mapping, Sequence
from typing import Any, cast

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.sessions.items import committed_event_of
from mcp_platform.application.audit.diff import ImageDiff, diff_images
from mcp_platform.application.audit.images import WireImage, WireValue
from mcp_platform.application.audit.records import EVENT_NAMES, ExpiredSession, MalformedStreamRecord, StreamChange


@functools.cache
def _deserializer() -> Any:
    """boto3's deserializer, accepting binary as the base64 text the Lambda event carries."""
    from boto3.dynamodb.types import Binary, TypeDeserializer

    class StreamDeserializer(TypeDeserializer):
        def _deserialize_b(self, value: Any) -> Binary:
            return Binary(base64.b64decode(value) if isinstance(value, str) else value)

        def _deserialize_bs(self, value: Any) -> set[Binary]:
            return {self._deserialize_b(v) for v in value}

    return StreamDeserializer()


def to_plain(value: Mapping[str, Any]) -> Any:
    """One DynamoDB JSON value (``{"N": "1"}``) to Python (Decimal numbers, sets, Binary)."""
    return _deserializer().deserialize(cast(Any, value))


def image_to_plain(image: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
    if not image:
        return {}
    return {name: to_plain(value) for name, value in image.items()}


class DynamoImageCodec:
    """DynamoDB JSON as the audit reads it; the session's ``context`` grows without bound."""

    summarised_lists: frozenset[str] = frozenset({ts.CONTEXT})

    def to_plain(self, value: WireValue) -> Any:
        return to_plain(value)

    def list_items(self, value: WireValue) -> Sequence[WireValue] | None:
        return cast(Sequence[WireValue], value["L"]) if "L" in value else None

    def kind(self, value: WireValue) -> str:
        return next(iter(value), "?")  # the type descriptor: "S", "N", "M", "L", ...


STREAM_IMAGES = DynamoImageCodec()


def diff_stream_images(old: WireImage | None, new: WireImage | None, **options: Any) -> ImageDiff:
    """:func:`~mcp_platform.application.audit.diff.diff_images` of two DynamoDB stream images."""
    return diff_images(old, new, codec=STREAM_IMAGES, **options)


def _who(identity: Mapping[str, Any] | None) -> dict[str, str]:
    # Streams carry an identity only for service deletes (TTL); every other change was made by
    # the platform's own functions on behalf of the session owner.
    if identity is None:
        return {"type": "Application"}
    return {"type": str(identity.get("type", "")), "principal_id": str(identity.get("principalId", ""))}


def _expired_session(image: WireImage | None) -> ExpiredSession:
    metadata = image_to_plain(image)
    owner = metadata.get(ts.OWNER)
    return ExpiredSession(
        created_at=metadata.get(ts.CREATED_AT),
        expires_at=metadata.get(ts.TTL),
        updated_at=metadata.get(ts.UPDATED_AT),
        owner=str(owner) if owner is not None else None,
        kind=str(metadata.get(ts.KIND, ts.KIND_APPLICATION)),
        version=int(metadata[ts.VERSION]) if ts.VERSION in metadata else None,
    )


def _string(image: WireImage | None, name: str) -> str | None:
    value = image.get(name) if image is not None else None
    text = value.get("S") if isinstance(value, Mapping) else None
    return text if isinstance(text, str) else None


def _trace_of_change(old_image: WireImage | None, new_image: WireImage | None) -> tuple[str | None, str | None]:
    """The (trace id, span id) of the request that made a change, or (None, None).

    A traced write stores its request's ids on the item (the tool-call commit: the record, its
    marker and the session's metadata). A write that stores none (a ttl slide, an end, TTL)
    leaves the previous request's ids in the image, so the new image alone would name the wrong
    trace. Every request is a span of its own (``protocol.trace_context``): the change is the
    request's exactly when the new image holds a span id the old image did not."""
    span_id = _string(new_image, ts.SPAN_ID)
    if span_id is None or span_id == _string(old_image, ts.SPAN_ID):
        return None, None
    return _string(new_image, ts.TRACE_ID), span_id


def read_stream_change(record: Mapping[str, Any]) -> StreamChange:
    """One stream record as a change; :class:`MalformedStreamRecord` when it is not one."""
    try:
        ddb = record["dynamodb"]
        keys = ddb["Keys"]
        event_name = record["eventName"]
        sequence_number = ddb["SequenceNumber"]
        pk = keys[ts.PK]["S"]
        sk = keys[ts.SK]["S"]
        change_epoch = float(ddb["ApproximateCreationDateTime"])
    except (KeyError, TypeError, ValueError) as exc:
        raise MalformedStreamRecord(f"not a DynamoDB stream record: missing or bad {exc}") from exc
    if event_name not in EVENT_NAMES:
        raise MalformedStreamRecord(f"unknown eventName {event_name!r}")
    if not (isinstance(sequence_number, str) and sequence_number.isdigit()):
        raise MalformedStreamRecord(f"bad SequenceNumber {sequence_number!r}")
    identity = record.get("userIdentity")
    session_id = pk[len(ts.SESSION_PREFIX) :] if pk.startswith(ts.SESSION_PREFIX) else None
    ttl_removal = (
        event_name == "REMOVE"
        and identity is not None
        and identity.get("type") == ts.TTL_IDENTITY_TYPE
        and identity.get("principalId") == ts.TTL_PRINCIPAL
    )
    old_image = ddb.get("OldImage")
    new_image = ddb.get("NewImage")
    expiry = ttl_removal and sk == ts.METADATA_SK and session_id is not None
    trace_id, span_id = _trace_of_change(old_image, new_image)
    return StreamChange(
        event_id=str(record.get("eventID", "")),
        event_name=event_name,
        sequence_number=sequence_number,
        change_epoch=change_epoch,
        pk=pk,
        sk=sk,
        old_image=old_image,
        new_image=new_image,
        session_id=session_id,
        is_ttl_removal=ttl_removal,
        who=_who(identity),
        expired=_expired_session(old_image) if expiry else None,
        trace_id=trace_id,
        span_id=span_id,
        committed_event=_committed_event(event_name, new_image),
    )


def _committed_event(event_name: str, new_image: Mapping[str, Any] | None) -> bytes | None:
    """The event a commit stored on a tool-call record, on the record's INSERT only (a record is
    immutable: no later change of it carries a new event)."""
    if event_name != "INSERT" or not new_image:
        return None
    return committed_event_of(new_image)
