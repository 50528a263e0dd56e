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
"""

from __future__ import annotations

import json
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


def loads(data: bytes) -> Any:
    """The document in ``data`` exactly as ``json.loads(data.decode("utf-8"))`` reads it, with
    its errors: UnicodeDecodeError, ValueError (JSONDecodeError) or RecursionError."""
    if _LONG_DIGIT_RUN not in data.translate(_DIGITS_AS_ZEROS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # the standard library has the answer, or the error to report
    return json.loads(data.decode("utf-8"))
