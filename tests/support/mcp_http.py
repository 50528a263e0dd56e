"""Raw HTTP helpers for requests an SDK client would never send."""

from __future__ import annotations

import json
from typing import Any

import httpx

from mcp_platform.transport.modern import NAME_BEARING

ACCEPT_BOTH = "application/json, text/event-stream"
MODERN = "2026-07-28"
CAPS_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def headers(key: str | None, **extra: str) -> dict[str, str]:
    found = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}
    if key is not None:
        found["Authorization"] = f"Bearer {key}"
    found.update({name.replace("_", "-"): value for name, value in extra.items()})
    return found


def sse_messages(response: httpx.Response) -> list[dict[str, Any]]:
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        return [response.json()]
    out = []
    for block in response.text.split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data:") and line[5:].strip():
                out.append(json.loads(line[5:]))
    return out


def final_message(response: httpx.Response) -> dict[str, Any]:
    return [m for m in sse_messages(response) if "id" in m][-1]


def initialize(url: str, key: str, version: str = "2025-11-25") -> str:
    response = httpx.post(
        url,
        headers=headers(key),
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
        },
    )
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


def call(
    url: str, key: str, session_id: str, request_id: int | str, method: str, params: dict[str, Any] | None = None
) -> httpx.Response:
    return httpx.post(
        url,
        headers=headers(key, **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"}),
        json={"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}},
        timeout=30,
    )


def modern_call(
    url: str, key: str, request_id: int | str, method: str, params: dict[str, Any], timeout: float = 30
) -> httpx.Response:
    extra = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    name_key = NAME_BEARING.get(method)
    if name_key is not None:
        extra["Mcp-Name"] = params[name_key]
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return httpx.post(url, headers=headers(key, **extra), json=body, timeout=timeout)
