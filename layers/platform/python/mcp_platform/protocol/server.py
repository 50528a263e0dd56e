"""Protocol dispatch: one JSON-RPC request in, one result (or JsonRpcError) out.

Knows nothing about HTTP: the transport builds a :class:`~mcp_platform.protocol.call.CallContext`,
asks :meth:`McpServer.bind` what the request needs of it (:mod:`mcp_platform.protocol.binding`) and
renders what the request's work returns. Method sets differ per era: ``initialize``, ``ping``
and ``logging/setLevel`` exist only in the 2025 revisions; ``server/discover`` only in
2026-07-28, where every result also carries ``resultType`` and list results carry
``ttlMs``/``cacheScope``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mcp_platform.application.interactive import INPUT_METHODS, InputRequired
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol.binding import BoundRequest, Work, refusal
from mcp_platform.protocol.call import CallContext
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.context import LOG_LEVELS, Services, ToolContext
from mcp_platform.protocol.features import FEATURES
from mcp_platform.protocol.handshake import Initialized, transport_session_attributes
from mcp_platform.protocol.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, JsonRpcError, Request
from mcp_platform.protocol.pagination import LIST_TTL_MS, page
from mcp_platform.protocol.preparation import PreparedCall, require_client_capabilities
from mcp_platform.protocol.tools import ToolCatalog
from mcp_platform.protocol.versions import MODERN_VERSIONS

if TYPE_CHECKING:  # the tasks extension loads only where it is deployed
    from mcp_platform.protocol.tasks import TaskRequest

SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"

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
        extensions: Mapping[str, dict[str, Any]] | None = None,
    ) -> None:
        self.extensions = dict(extensions or {})
        """Extensions advertised in 2026 capabilities beside the features' own (e.g. the OAuth
        client-credentials extension: served by the authorization server, not by a method here)."""
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
        if modern and self.extensions:  # undefined on the 2025 wire, as the tasks extension
            capabilities["extensions"] = {**capabilities.get("extensions", {}), **self.extensions}
        if not modern:
            capabilities["logging"] = {}
        return capabilities

    def initialize(self, request: Request) -> Initialized:
        """2025 initialize: what the new transport session keeps, and the InitializeResult.
        Raises -32602 for params initialize cannot accept (nothing is stored then)."""
        attributes = transport_session_attributes(request.params)
        return Initialized(attributes, self.initialize_result(attributes["protocol_version"]))

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

    def bind(self, request: Request, call: CallContext) -> BoundRequest:
        """Match the request to what serves it, with no I/O and no refusal: what can refuse it
        runs in ``admit``, after whatever checks the transport makes on the binding's word."""
        if request.method == "tools/call":
            return self._bind_tool_call(request, call)
        return BoundRequest(request, admit=lambda: self._admit(request, call))

    def _bind_tool_call(self, request: Request, call: CallContext) -> BoundRequest:
        try:
            # Preparing reads nothing the transport-session check changes, so it may run first.
            prepared = self.runner.prepare(request, call, self.catalog.tools)
        except JsonRpcError as refused:
            return BoundRequest(request, admit=refusal(refused), streams=True)
        on_transport_session = (
            call.transport_session_id is not None
            and prepared.invalid_arguments is None  # refused before any read
            and prepared.session_id == call.transport_session_id
        )
        # It streams: progress, logs and 2025 questions travel on the call's stream.
        return BoundRequest(
            request=request,
            admit=lambda: self._admit_tool_call(request, prepared, call),
            streams=True,
            validates_transport_session=on_transport_session,
        )

    async def _admit_tool_call(self, request: Request, prepared: PreparedCall, call: CallContext) -> Work:
        await self.runner.load(prepared, call)
        require_client_capabilities(prepared.spec, call)
        if self._runs_as_task(prepared, call):
            kept = self.services.tasks.task_request(request, prepared, call)  # admitted before anything
            await self._open_interaction(request, call, consume=True)  # the questions before it starts

            async def start() -> dict[str, Any]:
                task = self._start_task(prepared, call, kept)
                return self._finish(await self._answered(request, call, task), call)

            return start
        # A replay of a committed call is answered from its marker: its state is not used up.
        await self._open_interaction(request, call, consume=prepared.prior_result is None)

        async def work() -> dict[str, Any]:
            return self._finish(await self._answered(request, call, self.runner.run(prepared, call)), call)

        return work

    async def _admit(self, request: Request, call: CallContext) -> Work:
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
                from mcp_platform.application.tasks.service import missing_extension

                raise missing_extension(f"Tool {prepared.spec.name} runs only as a task, and tasks are not deployed")
            return False
        return prepared.invalid_arguments is None and bool(self.services.tasks.wants_task(prepared.spec, call))

    async def _start_task(self, prepared: PreparedCall, call: CallContext, kept: TaskRequest) -> dict[str, Any]:
        """The tool's ``ask_first`` questions (an InputRequiredResult until answered), then the task."""
        answers: dict[str, dict[str, Any]] = {}
        if prepared.spec.ask_first is not None:
            from mcp_platform.protocol.interactive import ask_all

            questions = prepared.spec.ask_first(**prepared.arguments)
            context = ToolContext(
                principal=call.principal,
                services=self.services,
                interaction=call.interaction,
                client_capabilities=call.client_capabilities,
            )
            answers = await ask_all(context, questions)
        created: dict[str, Any] = await self.services.tasks.start(kept, call, answers)
        return created

    async def _open_interaction(self, request: Request, call: CallContext, *, consume: bool) -> None:
        """How the request's questions reach its client (``interactive``): 2026, rounds on the
        methods that may answer InputRequiredResult (a bad requestState is refused here, before
        any work); 2025, requests on the call's stream. Loaded on first use, not at start."""
        if request.method not in INPUT_METHODS:
            return  # nothing else may ask (completion, lists, ...): ctx.elicit there is refused
        if call.modern:
            call.interaction = await _rounds().open_round(request, call, self.services.interactive, consume=consume)
        elif call.transport_session_id is not None and self.services.interactive is not None:
            call.interaction = self.services.interactive.outbound.for_call(call)

    async def _answered(self, request: Request, call: CallContext, work: Awaitable[dict[str, Any]]) -> dict[str, Any]:
        """The work's result; a run that stopped for input answers an InputRequiredResult."""
        try:
            return await work
        except InputRequired as needed:
            result: dict[str, Any] = await _rounds().input_required_result(
                needed, request, call, self.services.interactive
            )
            return result

    async def handle(self, request: Request, call: CallContext) -> dict[str, Any]:
        """The request's result, or its JsonRpcError: the transport-free path."""
        work = await self.bind(request, call).admit()
        return await work()

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


@functools.cache
def _rounds() -> ModuleType:
    """The 2026 multi-round module, imported on the first request that may ask (not at start)
    and then held: a function-level ``from ... import`` costs ~2 us on every call."""
    from mcp_platform.application.interactive import rounds

    return rounds
