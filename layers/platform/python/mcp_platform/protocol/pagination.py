"""Opaque list cursors (S6) and the 2026-07-28 list-cache hints, shared by every list method."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

from mcp_platform.protocol.jsonrpc import INVALID_PARAMS, JSONObject, JsonRpcError

LIST_TTL_MS = 300_000  # tools/resources/prompts lists change only with a deployment


def page(
    key: str, items: Sequence[JSONObject], cursor: Any, page_size: int, *, modern: bool, private: bool = False
) -> JSONObject:
    """One page of ``items`` under ``key``, with ``nextCursor`` while more remain. ``private``:
    the list depends on who asks (policies filtered it), so no shared cache may keep it."""
    start = decode_cursor(cursor)
    result: JSONObject = {key: list(items[start : start + page_size])}
    if start + page_size < len(items):
        result["nextCursor"] = encode_cursor(start + page_size)
    if modern:
        result.update(ttlMs=LIST_TTL_MS, cacheScope="private" if private else "public")
    return result


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def decode_cursor(cursor: Any) -> int:
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(str(cursor).encode()).decode()
        if not text.startswith("o:"):
            raise ValueError(text)
        offset = int(text[2:])
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise JsonRpcError(INVALID_PARAMS, "Invalid cursor") from exc
    if offset < 0:
        raise JsonRpcError(INVALID_PARAMS, "Invalid cursor")
    return offset
