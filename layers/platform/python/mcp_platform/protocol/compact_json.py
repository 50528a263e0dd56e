"""JSON on the request path: every request body read, every response, SSE event and stream record.

orjson encodes a tools/call response in about a fifteenth of the standard library's time, and a
call encodes three documents (its response, the result's size for the event, the event itself).
What orjson refuses, the standard library encodes as before: integers beyond 64 bits (DynamoDB
numbers carry 38 digits), non-string keys, strings with lone surrogates. The output is UTF-8
(non-ASCII text is not escaped); a non-finite float is written as ``null``, where the standard
library wrote ``NaN``, which no JSON parser is obliged to read; a datetime, UUID or dataclass
in a tool's result is written as orjson writes it (RFC 3339 text, the UUID text, an object)
rather than as its ``str``.

Reading takes orjson's answer only where it is the standard library's: never for a document
with a run of 19 or more digits (orjson reads an integer beyond 64 bits as a float, silently
losing digits), and not when orjson refuses the document (lone surrogate escapes, ``NaN``,
``1e400``, nesting past 1024 levels): the standard library reads, or refuses, those as before.
Both keep the last of two members with one key; :func:`repeated_key` tells whether that happened.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

# ASCII output: a lone surrogate is escaped (\udXXX) rather than failing the UTF-8 encode.
_STANDARD = json.JSONEncoder(separators=(",", ":"), default=str)
# Digits to "0", every other byte to ".": a run of 19 digits is then a plain substring search
# (C speed; a regular expression scanning for [0-9]{19} cost more than the whole parse).
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x2E for byte in range(256))
_LONG_DIGIT_RUN = b"0" * 19


def dumps(value: Any) -> bytes:
    """``value`` as compact JSON bytes; an unknown type is written as its ``str``."""
    try:
        return orjson.dumps(value, default=str)
    except TypeError:  # orjson.JSONEncodeError is a TypeError: what orjson cannot write
        return _STANDARD.encode(value).encode("ascii")


def canonical(value: Any, *, default: Callable[[Any], Any] | None = None) -> str:
    """The platform's one canonical JSON text, for digests and idempotency tokens: keys sorted, no
    whitespace, non-ASCII escaped, so equal values give equal text on every instance and release.
    ``default`` writes what JSON has no type for (``str`` for a tool's arguments); without it such
    a value is a TypeError. The standard library's, not orjson's: the text must never change."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=default)


def loads(data: bytes) -> Any:
    """The document in ``data`` exactly as ``json.loads(data.decode("utf-8"))`` reads it, with
    its errors: UnicodeDecodeError, ValueError (JSONDecodeError) or RecursionError."""
    if _LONG_DIGIT_RUN not in data.translate(_DIGITS_AS_ZEROS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # the standard library has the answer, or the error to report
    return json.loads(data.decode("utf-8"))


def repeated_key(data: bytes, document: Any) -> str | None:
    """A key that ``data`` repeats within one object (``document`` is what :func:`loads` read from
    it, keeping only the last member), else None.

    Screened at C speed: each member of an object is written with one colon outside strings, and
    orjson writes the document back with one colon per member kept and the same colons inside
    strings; equal counts mean no member was dropped. Unless a colon is spelled as an escape
    (``\\u003a``: one colon in the document, none in the text) or orjson cannot write the
    document; then, and for unequal counts, the standard library reads the text again and names
    the first repeated key. A document that nests deep must have been refused before."""
    try:
        written: bytes | None = orjson.dumps(document)
    except TypeError:  # orjson.JSONEncodeError: an integer beyond 64 bits, a lone surrogate
        written = None
    escaped = b"\\" in data and (b"\\u003a" in data or b"\\u003A" in data)
    if written is not None and not escaped and written.count(b":") == data.count(b":"):
        return None
    repeated: list[str] = []

    def first_repeat(members: list[tuple[str, Any]]) -> dict[str, Any]:
        if not repeated:
            seen: set[str] = set()
            for key, _ in members:
                if key in seen:
                    repeated.append(key)
                    break
                seen.add(key)
        return dict(members)

    json.loads(data.decode("utf-8"), object_pairs_hook=first_repeat)
    return repeated[0] if repeated else None
