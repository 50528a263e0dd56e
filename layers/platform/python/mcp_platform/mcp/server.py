"""Protocol dispatch: one JSON-RPC request in, one result (or JsonRpcError) out.

Knows nothing about HTTP: the transport builds a :class:`CallContext` and renders what this
returns. Method sets differ per era: ``initialize``, ``ping`` and ``logging/setLevel`` exist only
in the 2025 revisions; ``server/discover`` only in 2026-07-28, where every result also carries
``resultType`` and list results carry ``ttlMs``/``cacheScope``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_platform.interactive import INPUT_METHODS, InputRequired
from mcp_platform.mcp.catalog import Catalog
from mcp_platform.mcp.context import LOG_LEVELS, Notify, Services, ToolContext, _discard
from mcp_platform.mcp.features import FEATURES
from mcp_platform.mcp.jsonrpc import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    JsonRpcError,
    Request,
)
from mcp_platform.mcp.pagination import LIST_TTL_MS, page
from mcp_platform.mcp.preparation import PreparedCall, require_client_capabilities
from mcp_platform.mcp.tool_calls import ToolCallRunner
from mcp_platform.mcp.tools import ToolCatalog
from mcp_platform.mcp.versions import HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_VERSIONS

SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"


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
    client_capabilities: dict[str, Any] | None = None
    """What the client declared (2026: the request's ``_meta``; 2025: its initialize); None:
    unknown (a session from before capabilities were kept), so nothing is refused for it."""
    interaction: Any = None
    """How this request asks its client for input (``interactive.api.Interaction``), set by bind."""
    prepared: Any = None
    """The tools/call as ``defers_transport_check`` prepared it; ``bind`` reuses it (preparing reads
    nothing the transport-session check changes)."""

    def attach_transport_session(self, session: Any) -> None:
        """2025: the validated Mcp-Session-Id session, and what its initialize negotiated."""
        self.transport_session = session
        self.log_level = str(session.attributes.get("log_level", self.log_level))
        declared = session.attributes.get("client_capabilities")
        if isinstance(declared, dict):
            self.client_capabilities = declared


Handler = Callable[[Request, CallContext], Awaitable[dict[str, Any]]]


class McpServer:
    def __init__(
        self,
        catalog: Catalog | ToolCatalog,
        runner: ToolCallRunner,
        *,
        name: str = "mcp-platform",
        version: str = "0.1.0",
        instructions: str | None = None,
        page_size: int = 50,
        services: Services | None = None,
    ) -> None:
        self.catalog = catalog if isinstance(catalog, Catalog) else Catalog(tools=catalog)
        self.runner = runner
        self.services = services or runner.services
        self.server_info = {"name": name, "version": version}
        self.instructions = instructions
        self.page_size = page_size
        # Only features with something to serve register methods and advertise a capability.
        self.features = [f for f in (cls(self.catalog, self.services, page_size) for cls in FEATURES) if f.active]
        common: dict[str, Handler] = {"tools/list": self._tools_list}
        legacy: dict[str, Handler] = {"ping": self._ping, "logging/setLevel": self._set_level}
        modern: dict[str, Handler] = {"server/discover": self._discover}
        for feature in self.features:
            common.update(feature.methods())
            legacy.update(feature.legacy_methods())
            modern.update(feature.modern_methods())
        self._legacy: dict[str, Handler] = {**common, **legacy}
        self._modern: dict[str, Handler] = {**common, **modern}

    def capabilities(self, modern: bool) -> dict[str, Any]:
        # listChanged only when the notification streams that deliver it are on (stack option).
        capabilities: dict[str, Any] = {"tools": {"listChanged": self.services.notifications is not None}}
        for feature in self.features:
            advertised = feature.capability(modern)
            if advertised is not None:
                capabilities[feature.capability_key] = advertised
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
            prepared = call.prepared = self.runner.prepare(request, call, self.catalog.tools)
        except JsonRpcError:
            return False
        return prepared.invalid_arguments is None and prepared.session_id == call.transport_session_id

    async def bind(self, request: Request, call: CallContext) -> Callable[[], Awaitable[dict[str, Any]]]:
        """Do everything that can refuse the request (unknown method or tool, bad params,
        missing session) and return the coroutine function that does the work. The transport
        answers refusals as plain JSON and commits to a stream only for work."""
        if request.method == "tools/call":
            prepared = call.prepared or self.runner.prepare(request, call, self.catalog.tools)
            await self.runner.load(prepared, call)
            require_client_capabilities(prepared.spec, call)
            if self._runs_as_task(prepared, call):
                await self._open_interaction(request, call, consume=True)  # the questions before it starts

                async def start() -> dict[str, Any]:
                    return self._finish(
                        await self._answered(request, call, self._start_task(request, prepared, call)), call
                    )

                return start
            # A replay of a committed call is answered from its marker: its state is not used up.
            await self._open_interaction(request, call, consume=prepared.prior_result is None)

            async def work() -> dict[str, Any]:
                return self._finish(await self._answered(request, call, self.runner.run(prepared, call)), call)

            return work
        handler = self.handler_for(request.method, call.modern)
        await self._open_interaction(request, call, consume=True)

        async def simple() -> dict[str, Any]:
            return self._finish(await self._answered(request, call, handler(request, call)), call)

        return simple

    def _runs_as_task(self, prepared: PreparedCall, call: CallContext) -> bool:
        """Tasks extension: the worker runs it (a replay or a refused argument is answered here)."""
        if prepared.spec.task_support == "forbidden" or prepared.prior_result is not None:
            return False
        if self.services.tasks is None:
            if prepared.spec.task_support == "required":
                from mcp_platform.tasks.service import missing_extension

                raise missing_extension(f"Tool {prepared.spec.name} runs only as a task, and tasks are not deployed")
            return False
        return prepared.invalid_arguments is None and bool(self.services.tasks.wants_task(prepared.spec, call))

    async def _start_task(self, request: Request, prepared: PreparedCall, call: CallContext) -> dict[str, Any]:
        """The tool's ``ask_first`` questions (an InputRequiredResult until answered), then the task."""
        answers: dict[str, dict[str, Any]] = {}
        if prepared.spec.ask_first is not None:
            from mcp_platform.interactive.api import ask_all

            questions = prepared.spec.ask_first(**prepared.arguments)
            context = ToolContext(
                principal=call.principal,
                services=self.services,
                interaction=call.interaction,
                client_capabilities=call.client_capabilities,
            )
            answers = await ask_all(context, questions)
        created: dict[str, Any] = await self.services.tasks.start(request, prepared, call, answers)
        return created

    async def _open_interaction(self, request: Request, call: CallContext, *, consume: bool) -> None:
        """How the request's questions reach its client (``interactive``): 2026, rounds on the
        methods that may answer InputRequiredResult (a bad requestState is refused here, before
        any work); 2025, requests on the call's stream. Loaded on first use, not at start."""
        if request.method not in INPUT_METHODS:
            return  # nothing else may ask (completion, lists, ...): ctx.elicit there is refused
        if call.modern:
            from mcp_platform.interactive.rounds import open_round

            call.interaction = await open_round(request, call, self.services.interactive, consume=consume)
        elif call.transport_session_id is not None and self.services.interactive is not None:
            call.interaction = self.services.interactive.outbound.for_call(call)

    async def _answered(self, request: Request, call: CallContext, work: Awaitable[dict[str, Any]]) -> dict[str, Any]:
        """The work's result; a run that stopped for input answers an InputRequiredResult."""
        try:
            return await work
        except InputRequired as needed:
            from mcp_platform.interactive.rounds import input_required_result

            return await input_required_result(needed, request, call, self.services.interactive)

    async def handle(self, request: Request, call: CallContext) -> dict[str, Any]:
        return await (await self.bind(request, call))()

    def _finish(self, result: dict[str, Any], call: CallContext) -> dict[str, Any]:
        if call.modern:
            result.setdefault("resultType", "complete")
            # 2026-07-28: servers SHOULD identify themselves on every result.
            result["_meta"] = {**result.get("_meta", {}), SERVER_INFO_META_KEY: self.server_info}
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

    async def _tools_list(self, request: Request, call: CallContext) -> dict[str, Any]:
        # S5: no AWS call; S6: paginated with an opaque cursor.
        return page(
            "tools", self.catalog.tools.listing(), request.params.get("cursor"), self.page_size, modern=call.modern
        )
