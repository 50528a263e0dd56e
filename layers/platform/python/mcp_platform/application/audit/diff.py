"""Field-level diff of two stream images (A3), plus the JSON helpers the audit stores with.

Attributes are compared in the stream's wire form (equal wire values are equal items), so
unchanged attributes are never converted; only the values reported in the diff are decoded to
plain Python, through the :class:`~.ports.ImageCodec` (which knows the wire format). List
attributes that grow without bound (the codec names them: ``context``) have their changes
summarised (append count, the appended items when small, sizes) instead of copied whole. A
session's context is kept in context items of their own (one per write that appends): the INSERT
of one audits as ``lists.context = {"op": "added", "items_count", "items_bytes", "items"}``, the
entries that write appended, beside its metadata's ``context_bytes``/``context_items`` changes;
a metadata item from before them still holds a ``context`` list, whose appends audit as
``{"op": "append", ...}``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from mcp_platform.application.audit.images import ImageCodec, WireImage, WireValue
from mcp_platform.protocol import compact_json

VALUE_LIMIT_BYTES = 2048  # a changed value larger than this is replaced by its size and hash
APPENDED_INLINE_BYTES = 4096  # appended list items are copied only below this size...
APPENDED_INLINE_ITEMS = 10  # ...and this count


def _json_default(value: Any) -> Any:
    # Decimal: integral values stay exact ints; fractions become floats (JSON has no decimals).
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    # Binary: bytes, or the codec's wrapper of them (bytes-convertible, as ImageCodec promises).
    if isinstance(value, bytes | bytearray) or hasattr(value, "__bytes__"):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def dumps(value: Any, *, canonical: bool = True) -> str:
    """Compact, ASCII-only JSON: ``len()`` of the result is its size in bytes.

    ``canonical`` sorts keys so equal values hash alike; whole images skip it (a third of the
    cost) because they are stored as delivered and never compared by hash.
    """
    if canonical:
        return compact_json.canonical(value, default=_json_default)
    return json.dumps(value, default=_json_default, separators=(",", ":"))


def value_summary(encoded: str, kind: str) -> dict[str, Any]:
    """What is kept of a value too large to copy: its type, size and a hash to compare by."""
    digest = hashlib.sha256(encoded.encode("ascii")).hexdigest()[:32]
    return {"_summary": kind, "bytes": len(encoded), "sha256": digest}


def _bounded(codec: ImageCodec, wire: WireValue, limit: int) -> Any:
    plain = codec.to_plain(wire)
    encoded = dumps(plain)
    if len(encoded) <= limit:
        return plain
    return value_summary(encoded, codec.kind(wire))


@dataclass(frozen=True, slots=True)
class ImageDiff:
    added: dict[str, Any] = field(default_factory=dict)
    removed: dict[str, Any] = field(default_factory=dict)
    changed: dict[str, dict[str, Any]] = field(default_factory=dict)
    lists: dict[str, dict[str, Any]] = field(default_factory=dict)  # summarised list changes

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.lists)

    def to_dict(self) -> dict[str, Any]:
        return {"added": self.added, "removed": self.removed, "changed": self.changed, "lists": self.lists}


def _items_block(codec: ImageCodec, prefix: str, raw_items: Sequence[WireValue]) -> dict[str, Any]:
    """Count and size of some list items, plus the items themselves when they are small."""
    plain = [codec.to_plain(item) for item in raw_items]
    encoded = dumps(plain)
    block: dict[str, Any] = {f"{prefix}_count": len(plain), f"{prefix}_bytes": len(encoded)}
    if len(encoded) <= APPENDED_INLINE_BYTES and len(plain) <= APPENDED_INLINE_ITEMS:
        block[prefix] = plain
    return block


def _list_change(codec: ImageCodec, old: WireValue | None, new: WireValue | None) -> dict[str, Any]:
    old_items: list[WireValue] = list(codec.list_items(old) or []) if old is not None else []
    new_items: list[WireValue] = list(codec.list_items(new) or []) if new is not None else []
    if old is None:
        return {"op": "added", **_items_block(codec, "items", new_items)}
    if new is None:
        return {"op": "removed", "before_count": len(old_items)}
    before, after = len(old_items), len(new_items)
    summary: dict[str, Any] = {"before_count": before, "after_count": after}
    if after >= before and new_items[:before] == old_items:
        # The list_append of D3: the old list is an exact prefix of the new one.
        return {"op": "append", **summary, **_items_block(codec, "appended", new_items[before:])}
    if after < before and old_items[:after] == new_items:
        return {"op": "truncate", **summary, "removed_count": before - after}
    common = 0
    for old_item, new_item in zip(old_items, new_items, strict=False):
        if old_item != new_item:
            break
        common += 1
    return {"op": "rewrite", **summary, "common_prefix": common}


def _is_list(codec: ImageCodec, value: WireValue | None) -> bool:
    return value is None or codec.list_items(value) is not None


def diff_images(
    old: WireImage | None,
    new: WireImage | None,
    *,
    codec: ImageCodec,
    summarised_lists: Collection[str] | None = None,
    value_limit: int = VALUE_LIMIT_BYTES,
) -> ImageDiff:
    """Top-level attributes added, removed and changed between two images (``summarised_lists``
    defaults to the codec's)."""
    old = old or {}
    new = new or {}
    if summarised_lists is None:
        summarised_lists = codec.summarised_lists
    diff = ImageDiff()
    for name in sorted(old.keys() | new.keys()):
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if name in summarised_lists and _is_list(codec, before) and _is_list(codec, after):
            diff.lists[name] = _list_change(codec, before, after)
        elif before is None and after is not None:
            diff.added[name] = _bounded(codec, after, value_limit)
        elif after is None and before is not None:
            diff.removed[name] = _bounded(codec, before, value_limit)
        elif before is not None and after is not None:
            diff.changed[name] = {
                "old": _bounded(codec, before, value_limit),
                "new": _bounded(codec, after, value_limit),
            }
    return diff
