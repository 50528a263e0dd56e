"""Field-level diff of two stream images (A3), plus the JSON helpers the audit stores with.

Attributes are compared in DynamoDB JSON (equal wire values are equal items), so unchanged
attributes are never converted; only the values reported in the diff are deserialised to plain
Python. List attributes such as ``context`` grow without bound, so their changes are summarised
(append count, the appended items when small, sizes) instead of copied whole.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, cast

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.protocol import compact_json

SUMMARISED_LISTS: frozenset[str] = frozenset({ts.CONTEXT})
VALUE_LIMIT_BYTES = 2048  # a changed value larger than this is replaced by its size and hash
APPENDED_INLINE_BYTES = 4096  # appended list items are copied only below this size...
APPENDED_INLINE_ITEMS = 10  # ...and this count


@functools.cache
def _deserializer() -> Any:
    """boto3's deserializer, accepting binary as the base64 text the Lambda event carries.
    Built on first use: importing boto3 costs the endpoint ~0.2 s of cold start, and the
    endpoint imports this module (through the trail it reads) without ever diffing images."""
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


def _json_default(value: Any) -> Any:
    # Decimal: integral values stay exact ints; fractions become floats (JSON has no decimals).
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    from boto3.dynamodb.types import Binary  # loaded already: a Binary comes from to_plain

    if isinstance(value, Binary):
        return base64.b64encode(bytes(cast(Any, value))).decode("ascii")
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(cast(Any, value))).decode("ascii")
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


def _bounded(wire: Mapping[str, Any], limit: int) -> Any:
    plain = to_plain(wire)
    encoded = dumps(plain)
    if len(encoded) <= limit:
        return plain
    return value_summary(encoded, next(iter(wire), "?"))


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


def _items_block(prefix: str, raw_items: list[Any]) -> dict[str, Any]:
    """Count and size of some list items, plus the items themselves when they are small."""
    plain = [to_plain(item) for item in raw_items]
    encoded = dumps(plain)
    block: dict[str, Any] = {f"{prefix}_count": len(plain), f"{prefix}_bytes": len(encoded)}
    if len(encoded) <= APPENDED_INLINE_BYTES and len(plain) <= APPENDED_INLINE_ITEMS:
        block[prefix] = plain
    return block


def _list_change(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> dict[str, Any]:
    old_items: list[Any] = list(old["L"]) if old is not None and "L" in old else []
    new_items: list[Any] = list(new["L"]) if new is not None and "L" in new else []
    if old is None:
        return {"op": "added", **_items_block("items", new_items)}
    if new is None:
        return {"op": "removed", "before_count": len(old_items)}
    before, after = len(old_items), len(new_items)
    summary: dict[str, Any] = {"before_count": before, "after_count": after}
    if after >= before and new_items[:before] == old_items:
        # The list_append of D3: the old list is an exact prefix of the new one.
        return {"op": "append", **summary, **_items_block("appended", new_items[before:])}
    if after < before and old_items[:after] == new_items:
        return {"op": "truncate", **summary, "removed_count": before - after}
    common = 0
    for old_item, new_item in zip(old_items, new_items, strict=False):
        if old_item != new_item:
            break
        common += 1
    return {"op": "rewrite", **summary, "common_prefix": common}


def diff_images(
    old: Mapping[str, Mapping[str, Any]] | None,
    new: Mapping[str, Mapping[str, Any]] | None,
    *,
    summarised_lists: Collection[str] = SUMMARISED_LISTS,
    value_limit: int = VALUE_LIMIT_BYTES,
) -> ImageDiff:
    """Top-level attributes added, removed and changed between two DynamoDB JSON images."""
    old = old or {}
    new = new or {}
    diff = ImageDiff()
    for name in sorted(old.keys() | new.keys()):
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if name in summarised_lists and ((before is None or "L" in before) and (after is None or "L" in after)):
            diff.lists[name] = _list_change(before, after)
        elif before is None and after is not None:
            diff.added[name] = _bounded(after, value_limit)
        elif after is None and before is not None:
            diff.removed[name] = _bounded(before, value_limit)
        elif before is not None and after is not None:
            diff.changed[name] = {"old": _bounded(before, value_limit), "new": _bounded(after, value_limit)}
    return diff
