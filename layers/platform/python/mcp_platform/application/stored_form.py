"""The stored form of a value: whether the platform can keep it as sent, and its size as kept.

A tools/call's arguments are written to DynamoDB (the call record), travel through DynamoDB
Streams to the audit function and through Kinesis to ingest; a task keeps the call's progress
token, the client's capabilities and its answers; a transport session keeps what initialize
declared. JSON can carry values none of those can represent, and a value DynamoDB accepts can
still be one the audit function's deserialiser rejects (boto3 reads numbers with a 38-digit
decimal context that traps rounding), which would send the stream record to the audit DLQ. So
every such value is checked by the same rules, here, where every store of the platform applies
them (the DynamoDB adapters and the test harness's in-memory store alike), and refused with a
message naming where it is. The protocol layer applies them through its
:class:`~mcp_platform.protocol.storability.Storability` port (:data:`STORED_FORM`).

The same walk measures the value as DynamoDB sizes it (the session store's ``codec.attr_size``
of its attribute value), so the call-record budget costs no second pass over the arguments.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Mapping

from mcp_platform.protocol.storability import Inadmissible

# The decimal context boto3's TypeDeserializer reads DynamoDB numbers with (38 digits; exponent
# bounds; rounding, overflow and underflow trapped): a number it cannot read is not admitted.
DYNAMODB_NUMBERS = decimal.Context(
    Emin=-128,
    Emax=126,
    prec=38,
    traps=[decimal.Clamped, decimal.Overflow, decimal.Inexact, decimal.Rounded, decimal.Underflow],
)
MAX_DEPTH = 32  # DynamoDB nests documents at most 32 levels deep


def check_text(text: str, path: str) -> int:
    """Well-formed Unicode only: a lone surrogate cannot be encoded as UTF-8 (DynamoDB, Kinesis).
    Returns the stored size (UTF-8 bytes)."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise Inadmissible(path, f"text is not well-formed Unicode (lone surrogate at {exc.start})") from exc


def check_number(number: int | float, path: str) -> int:
    """Returns the stored size, by the rule ``codec.attr_size`` follows for numbers."""
    if isinstance(number, float) and not math.isfinite(number):
        raise Inadmissible(path, f"number {number!r} cannot be stored")
    text = str(number) if isinstance(number, int) else repr(number)
    try:
        DYNAMODB_NUMBERS.create_decimal(text)
    except (decimal.DecimalException, ValueError) as exc:
        raise Inadmissible(
            path, f"number {_clip(text)} cannot be stored (at most 38 significant digits, magnitude 1e-130 to 1e126)"
        ) from exc
    return len(text.lstrip("-").replace(".", "")) // 2 + 2


def check_storable(value: object, path: str = "", depth: int = 0) -> int:
    """Raise :class:`Inadmissible` unless ``value`` round-trips through DynamoDB and the audit;
    return its stored size in bytes (equal to ``attr_size(to_attr(value))``)."""
    if depth > MAX_DEPTH:
        raise Inadmissible(path, f"nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, (int, float)):
        return check_number(value, path)
    if isinstance(value, str):
        return check_text(value, path)
    if isinstance(value, Mapping):
        size = 3
        for key, item in value.items():
            if not key:  # the emulator stores {"": ...} and then serves an item no client can read
                raise Inadmissible(f"{path} (a key)", "an empty key cannot be stored")
            size += 1 + check_text(str(key), f"{path} (a key)")
            size += check_storable(item, f"{path}.{key}" if path else str(key), depth + 1)
        return size
    if isinstance(value, (list, tuple)):
        return 3 + sum(1 + check_storable(item, f"{path}[{index}]", depth + 1) for index, item in enumerate(value))
    raise Inadmissible(path, f"a {type(value).__name__} cannot be stored")


class StoredForm:
    """The protocol's :class:`~mcp_platform.protocol.storability.Storability`, by these rules."""

    def measure(self, value: object, path: str = "") -> int:
        return check_storable(value, path)

    def measure_entries(self, entries: Mapping[str, object], path: str) -> tuple[int, dict[str, int]]:
        """Each entry checked before its name (the entry is what a caller gets wrong), so a
        refusal names the entry; the total is what :func:`check_storable` gives for the map."""
        sizes: dict[str, int] = {}
        total = 3
        for name, value in entries.items():
            entry_path = f"{path}.{name}"
            size = check_text(value, entry_path) if type(value) is str else check_storable(value, entry_path)
            sizes[name] = size
            total += 1 + check_text(name, f"{path} (a key)") + size
        return total, sizes


STORED_FORM = StoredForm()


def _clip(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else f"{text[:12]}…({len(text)} chars)"
