"""Digests that match an answer to its question and a round to its request, in both eras
(a 2025 call keeps its answers per key and question; a 2026 state binds them)."""

from __future__ import annotations

import hashlib
from typing import Any

from mcp_platform.protocol import compact_json
from mcp_platform.protocol.interactive import InputRequest
from mcp_platform.protocol.jsonrpc import Request


def _digest(value: Any) -> str:
    text = compact_json.canonical(value, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def salient_digest(request: Request) -> str:
    """What identifies the originating request: its target and arguments (not ``_meta``, not
    the round's own ``inputResponses``/``requestState``)."""
    if request.method == "resources/read":
        return _digest({"uri": request.params.get("uri")})
    return _digest({"name": request.params.get("name"), "arguments": request.params.get("arguments") or {}})


def question_digest(request: InputRequest) -> str:
    return _digest(request.to_wire())
