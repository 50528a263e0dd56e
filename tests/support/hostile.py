"""Requests a careless or hostile client sends: JSON with lone surrogates, NaN and huge numbers,
repeated headers. httpx's ``json=`` cannot encode a lone surrogate, so bodies are sent as
``json.dumps`` text (ASCII escapes), exactly what such a client puts on the wire."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx

from tests.support.endpoint import Instance
from tests.support.mcp_http import CAPS_META, MODERN, final_message, headers

NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def encode(body: Any) -> bytes:
    """JSON as a permissive client writes it: surrogates escaped, NaN/Infinity allowed."""
    return json.dumps(body).encode("ascii")


def post(url: str, header_list: Sequence[tuple[str, str]], body: Any, timeout: float = 30) -> httpx.Response:
    return httpx.post(url, headers=list(header_list), content=encode(body), timeout=timeout)


def modern_headers(key: str, method: str, params: Any) -> list[tuple[str, str]]:
    """The 2026 mirror headers for ``method``; a name that is not a plain ASCII string is left out
    (its header cannot carry it as is), which the server answers as a header mismatch."""
    found = [*headers(key).items(), ("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)]
    name = params.get(NAME_BEARING.get(method, ""), None) if isinstance(params, dict) else None
    if isinstance(name, str) and name.isascii() and name.isprintable() and len(name) < 4096:
        found.append(("Mcp-Name", name))
    return found


def modern_post(url: str, key: str, request_id: Any, method: str, params: Any) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return post(url, modern_headers(key, method, params), body)


def tool_answer(instance: Instance, key: str, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A 2026 tools/call's final JSON-RPC message, after checking it was not a 5xx."""
    params = {"name": name, "arguments": arguments, "_meta": CAPS_META}
    response = modern_post(instance.url, key, request_id, "tools/call", params)
    assert response.status_code < 500, response.text
    return final_message(response)
