"""Helpers for the interactive-tool tests: 2026 rounds and 2025 sessions over raw HTTP."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.mcp_http import MODERN, final_message, headers, modern_call

ALL_CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}
LEGACY = "2025-11-25"


def modern_meta(capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": ALL_CAPS if capabilities is None else capabilities,
        **extra,
    }


def round_trip(url: str, key: str, request_id: int, name: str, arguments: dict[str, Any], **params: Any) -> Any:
    """One 2026 tools/call (``params``: inputResponses, requestState, _meta); the final message."""
    meta = params.pop("_meta", modern_meta())
    body = {"name": name, "arguments": arguments, "_meta": meta, **params}
    return final_message(modern_call(url, key, request_id, "tools/call", body))


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def open_legacy(url: str, key: str, capabilities: dict[str, Any] | None = None) -> dict[str, str]:
    """initialize (2025-11-25) declaring ``capabilities``; the headers of the session's requests."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": ALL_CAPS if capabilities is None else capabilities,
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    response = httpx.post(url, headers=headers(key), json=body, timeout=30)
    assert response.status_code == 200, response.text
    return headers(key, **{"Mcp-Session-Id": response.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY})


def tool_request(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def reply(url: str, session_headers: dict[str, str], request_id: Any, result: dict[str, Any]) -> httpx.Response:
    """The client's JSON-RPC response to a server-to-client request, POSTed to ``url``."""
    return httpx.post(url, headers=session_headers, json={"jsonrpc": "2.0", "id": request_id, "result": result})


def text_of(message: dict[str, Any]) -> str:
    assert "result" in message, message
    return str(message["result"]["content"][0]["text"])
