"""Protocol dispatch: one JSON-RPC request in, one result (or JsonRpcError) out.

Knows nothing about HTTP: the transport builds a :class:`CallContext` and renders what this
returns. Method sets differ per era: ``initialize``, ``ping`` and ``logging/setLevel`` exist only
in the 2025 revisions; ``server/discover`` only in 2026-07-28, where every result also carries
``resultType`` and list results carry ``ttlMs``/``cacheScope``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_platform.mcp.context import LOG_LEVELS, Notify, Services, _discard
from mcp_platform.mcp.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, JsonRpcError, Request
from mcp_platform.mcp.tool_calls import ToolCallRunner
from mcp_platform.mcp.tools import ToolCatalog
from mcp_platform.mcp.versions import HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_VERSIONS

LIST_TTL_MS = 300_000  # tools/resources/prompts lists change only with a deployment


@dataclass
class CallContext:
    """Who is calling, in which era, over which transport session."""

    principal: str
    protocol_version: str
    modern: bool
    transport_session_id: str | None = None
    """2025 era: the Mcp-Session-Id of the request."""
    transport_session: Any = None
    """The transport session once read (None until validated, see ``defers_transport_check``)."""
    notify: Notify = _discard
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    log_level: str | None = "info"


Handler = Callable[[Request, CallContext], Awaitable[dict[str, Any]]]


class McpServer:
    def __init__(
        self,
        catalog: ToolCatalog,
        runner: ToolCallRunner,
        *,
        name: str = "mcp-platform",
        version: str = "0.1.0",
        instructions: str | None = None,
        page_size: int = 50,
        services: Services | None = None,
    ) -> None:
        self.catalog = catalog
        self.runner = runner
        self.services = services or runner.services
        self.server_info = {"name": name, "version": version}
        self.instructions = instructions
        self.page_size = page_size
        common: dict[str, Handler] = {
            "tools/list": self._tools_list,
            "resources/list": self._empty_list("resources"),
            "resources/templates/list": self._empty_list("resourceTemplates"),
            "prompts/list": self._empty_list("prompts"),
            "prompts/get": self._prompts_get,
            "resources/read": self._resources_read,
        }
        self._legacy: dict[str, Handler] = {**common, "ping": self._ping, "logging/setLevel": self._set_level}
        self._modern: dict[str, Handler] = {**common, "server/discover": self._discover}

    def capabilities(self, modern: bool) -> dict[str, Any]:
        capabilities: dict[str, Any] = {
            "tools": {"listChanged": False},
            "resources": {"listChanged": False},
            "prompts": {"listChanged": False},
        }
        if not modern:
            capabilities["logging"] = {}
        return capabilities

    def negotiate(self, requested: Any) -> str:
        """initialize: echo a supported 2025 revision, else counter-offer the newest."""
        return requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION

    def initialize_result(self, version: str) -> dict[str, Any]:
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": self.capabilities(modern=False),
            "serverInfo": self.server_info,
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def handler_for(self, method: str, modern: bool) -> Handler:
        handler = (self._modern if modern else self._legacy).get(method)
        if handler is None:
            raise JsonRpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return handler

    def defers_transport_check(self, request: Request, call: CallContext) -> bool:
        """True when a tools/call will run on the transport session itself: its one consistent
        BatchGetItem (session + idempotency marker) then doubles as the session check. Any
        call refused before that read (unknown tool, bad arguments or key) is not deferred,
        so the transport still answers 404 for an unknown session first."""
        if request.method != "tools/call":
            return False
        try:
            prepared = self.runner.prepare(request, call, self.catalog)
        except JsonRpcError:
            return False
        return prepared.invalid_arguments is None and prepared.session_id == call.transport_session_id

    async def bind(self, request: Request, call: CallContext) -> Callable[[], Awaitable[dict[str, Any]]]:
        """Do everything that can refuse the request (unknown method or tool, bad params,
        missing session) and return the coroutine function that does the work. The transport
        answers refusals as plain JSON and commits to a stream only for work."""
        if request.method == "tools/call":
            prepared = self.runner.prepare(request, call, self.catalog)
            await self.runner.load(prepared, call)

            async def work() -> dict[str, Any]:
                return self._finish(await self.runner.run(prepared, call), call)

            return work
        handler = self.handler_for(request.method, call.modern)

        async def simple() -> dict[str, Any]:
            return self._finish(await handler(request, call), call)

        return simple

    async def handle(self, request: Request, call: CallContext) -> dict[str, Any]:
        return await (await self.bind(request, call))()

    @staticmethod
    def _finish(result: dict[str, Any], call: CallContext) -> dict[str, Any]:
        if call.modern:
            result.setdefault("resultType", "complete")
        return result

    # -- methods -------------------------------------------------------------------------------
    async def _ping(self, request: Request, call: CallContext) -> dict[str, Any]:
        return {}

    async def _discover(self, request: Request, call: CallContext) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(MODERN_VERSIONS),
            "capabilities": self.capabilities(modern=True),
            "serverInfo": self.server_info,
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "public",
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    async def _set_level(self, request: Request, call: CallContext) -> dict[str, Any]:
        level = request.params.get("level")
        if level not in LOG_LEVELS:
            raise JsonRpcError(INVALID_PARAMS, f"level must be one of {', '.join(LOG_LEVELS)}")
        if call.transport_session is not None:
            await self.runner.set_log_level(call.transport_session, level, call.principal)
        return {}

    async def _prompts_get(self, request: Request, call: CallContext) -> dict[str, Any]:
        # Advertised capability with no prompts yet: every name is unknown (invalid params).
        raise JsonRpcError(INVALID_PARAMS, f"Unknown prompt: {request.params.get('name')}")

    async def _resources_read(self, request: Request, call: CallContext) -> dict[str, Any]:
        uri = request.params.get("uri")
        if call.modern:  # 2026-07-28 retires -32002
            raise JsonRpcError(INVALID_PARAMS, f"Unknown resource: {uri}")
        raise JsonRpcError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})

    async def _tools_list(self, request: Request, call: CallContext) -> dict[str, Any]:
        # S5: no AWS call; S6: paginated with an opaque cursor.
        tools = self.catalog.listing()
        start = _decode_cursor(request.params.get("cursor"))
        page = tools[start : start + self.page_size]
        result: dict[str, Any] = {"tools": page}
        if start + self.page_size < len(tools):
            result["nextCursor"] = _encode_cursor(start + self.page_size)
        if call.modern:
            result.update(ttlMs=LIST_TTL_MS, cacheScope="public")
        return result

    def _empty_list(self, key: str) -> Handler:
        async def handler(request: Request, call: CallContext) -> dict[str, Any]:
            _decode_cursor(request.params.get("cursor"))
            result: dict[str, Any] = {key: []}
            if call.modern:
                result.update(ttlMs=LIST_TTL_MS, cacheScope="public")
            return result

        return handler


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def _decode_cursor(cursor: Any) -> int:
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
