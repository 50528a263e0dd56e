"""JSON-shaped Python values <-> DynamoDB AttributeValues, size estimates, the D5 ttl check.

Works on the low-level client shape (``{"S": ...}``) used by both boto3 and the DAX client.
Numbers come back as ``int`` when integral in form, else ``float`` (no ``Decimal`` leaks out).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mcp_platform.application.sessions.errors import InvalidTtl

AttributeValue = dict[str, Any]
Item = dict[str, AttributeValue]

# 10^10 epoch seconds is the year 2286; any current time in milliseconds is ~1.7e12 (D5).
MAX_EPOCH_SECONDS = 10_000_000_000


def require_epoch_seconds(value: object) -> int:
    """Return ``value`` if it is a plausible epoch-seconds ttl, else raise InvalidTtl (D5)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < MAX_EPOCH_SECONDS:
        raise InvalidTtl(value)
    return value


def to_attr(value: Any) -> AttributeValue:
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int):
        return {"N": str(value)}
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot store non-finite number {value!r}")
        return {"N": repr(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, bytes | bytearray):
        return {"B": bytes(value)}
    if isinstance(value, Mapping):
        return {"M": {_key(k): to_attr(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"L": [to_attr(v) for v in value]}
    raise TypeError(f"cannot store a {type(value).__name__}")


def from_attr(attr: Mapping[str, Any]) -> Any:
    ((kind, raw),) = attr.items()
    if kind == "S":
        return raw
    if kind == "N":
        return float(raw) if any(c in raw for c in ".eE") else int(raw)
    if kind == "BOOL":
        return bool(raw)
    if kind == "NULL":
        return None
    if kind == "M":
        return {k: from_attr(v) for k, v in raw.items()}
    if kind == "L":
        return [from_attr(v) for v in raw]
    if kind == "B":
        return bytes(raw)
    if kind in ("SS", "BS"):
        return set(raw)
    if kind == "NS":
        return {float(n) if any(c in n for c in ".eE") else int(n) for n in raw}
    raise ValueError(f"unknown attribute type {kind!r}")


def to_item(values: Mapping[str, Any]) -> Item:
    return {name: to_attr(value) for name, value in values.items()}


def from_item(item: Mapping[str, AttributeValue]) -> dict[str, Any]:
    return {name: from_attr(attr) for name, attr in item.items()}


def attr_size(attr: Mapping[str, Any]) -> int:
    """Approximate stored size in bytes, following DynamoDB's published sizing rules."""
    ((kind, raw),) = attr.items()
    if kind == "S":
        return len(raw.encode("utf-8"))
    if kind == "N":
        return len(raw.lstrip("-").replace(".", "")) // 2 + 2
    if kind == "B":
        return len(raw)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(1 + len(k.encode("utf-8")) + attr_size(v) for k, v in raw.items())
    if kind == "L":
        return 3 + sum(1 + attr_size(v) for v in raw)
    return sum(len(str(v)) for v in raw)


def item_size(item: Mapping[str, AttributeValue]) -> int:
    return sum(len(name.encode("utf-8")) + attr_size(attr) for name, attr in item.items())


def _key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"map keys must be strings, got {type(key).__name__}")
    return key
