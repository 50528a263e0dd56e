"""Records every message an ASGI app sends, and validates each against the official models.

The server's own code never imports the official SDK; its ``mcp-types`` models are the test
oracle: results per (method, protocol version), errors, notifications and server-to-client
requests per their schema.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mcp_types import JSONRPCError
from mcp_types.methods import parse_server_notification, parse_server_request, validate_server_result

DEFAULT_VERSION = "2025-03-26"


@dataclass
class Exchange:
    method: str | None
    version: str
    status: int = 0
    content_type: str = ""
    body: bytes = b""

    def messages(self) -> list[dict[str, Any]]:
        if not self.body:
            return []
        if self.content_type.startswith("text/event-stream"):
            found = []
            for block in self.body.decode().split("\n\n"):
                data = [line[5:].strip() for line in block.splitlines() if line.startswith("data:")]
                if data and data[0]:
                    found.append(json.loads("\n".join(data)))
            return found
        if self.content_type.startswith("application/json"):
            return [json.loads(self.body)]
        return []


@dataclass
class WireRecorder:
    """ASGI middleware: ``app = WireRecorder(app)``; then ``recorder.validate_all()``."""

    app: Any
    exchanges: list[Exchange] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/mcp":
            await self.app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        exchange = Exchange(method=None, version=headers.get("mcp-protocol-version", DEFAULT_VERSION))
        self.exchanges.append(exchange)
        chunks: list[bytes] = []

        async def recording_receive() -> dict[str, Any]:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    try:
                        decoded = json.loads(b"".join(chunks))
                        exchange.method = decoded.get("method") if isinstance(decoded, dict) else None
                    except (ValueError, UnicodeDecodeError):
                        exchange.method = None
            return message

        async def recording_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
                for name, value in message.get("headers", []):
                    if name.lower() == b"content-type":
                        exchange.content_type = value.decode()
            elif message["type"] == "http.response.body":
                exchange.body += message.get("body", b"")
            await send(message)

        await self.app(scope, recording_receive, recording_send)

    def validate_all(self) -> int:
        """Validate every recorded message; return how many were checked."""
        checked = 0
        for exchange in self.exchanges:
            for message in exchange.messages():
                validate_message(exchange, message)
                checked += 1
        return checked


def validate_message(exchange: Exchange, message: dict[str, Any]) -> None:
    if "error" in message:
        JSONRPCError.model_validate(message)
    elif "result" in message:
        assert exchange.method is not None, f"result without a known request method: {message}"
        validate_server_result(exchange.method, exchange.version, message["result"])
    elif "id" in message:  # a server-to-client request on the call's stream (2025 elicitation, ...)
        parse_server_request(message["method"], exchange.version, message.get("params"))
    else:
        parse_server_notification(message["method"], exchange.version, message.get("params"))
