"""The MCP server's use cases behind the dispatch table: one JSON-RPC request in, one result
(or JsonRpcError) out.

Knows nothing about HTTP: the transport builds a :class:`~mcp_platform.protocol.request_context.RequestContext`,
asks :meth:`McpServer.bind` what the request needs of it (:mod:`mcp_platform.protocol.binding`) and
renders what the request's work returns. Which method serves a request, what is advertised and
how a result is finished is the protocol's dispatch table (:mod:`mcp_platform.protocol.dispatch`);
here a tools/call runs (the tool-call runner, or a task of the tasks extension) and a request
that may ask its client opens its interaction (2026 rounds, 2025 requests on the call's stream).
The features over storage (resource subscriptions, tasks) load only where they are on.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mcp_platform.application.services import Services
from mcp_platform.application.stored_form import STORED_FORM
from mcp_platform.application.tool_calls import LoadedCall, ToolCallRunner
from mcp_platform.protocol.access import CALL_TOOL
from mcp_platform.protocol.binding import BoundRequest, Work, refusal
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.context import LOG_LEVELS, ToolContext
from mcp_platform.protocol.dispatch import Dispatch
from mcp_platform.protocol.features import FEATURES, Binder, Feature, Handler, ResourcesFeature
from mcp_platform.protocol.handshake import Initialized
from mcp_platform.protocol.input_required import INPUT_METHODS, InputRequired
from mcp_platform.protocol.jsonrpc import FORBIDDEN, INVALID_PARAMS, JSONObject, JsonRpcError, Request
from mcp_platform.protocol.preparation import PreparedCall, require_client_capabilities
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.protocol.tools import ToolCatalog

if TYPE_CHECKING:  # the tasks extension loads only where it is deployed
    from mcp_platform.application.tasks.service import TaskService
    from mcp_platform.protocol.tasks import TaskRequest


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
        services: Services[object] | None = None,
        extensions: Mapping[str, dict[str, Any]] | None = None,
    ) -> None:
        self.catalog = catalog if isinstance(catalog, Catalog) else Catalog(tools=catalog)
        self.runner = runner
        self.services = services or runner.services
        self.page_size = page_size
        features: list[Feature] = [cls(self.catalog, self.services, page_size) for cls in FEATURES]
        features += self._use_case_features(features)
        self.dispatch = Dispatch(
            features, server_info={"name": name, "version": version}, instructions=instructions, extensions=extensions
        )
        self.features = self.dispatch.features
        """The active features (the streams notify about the lists they serve)."""
        self.server_info = self.dispatch.server_info

    def _use_case_features(self, catalog_features: list[Feature]) -> list[Feature]:
        """The features over storage, each imported only where it is on (cold start)."""
        added: list[Feature] = [LogLevelFeature(self.runner), ToolCallsFeature(self)]
        resources = next(f for f in catalog_features if isinstance(f, ResourcesFeature))
        if self.services.notifications is not None and resources.active:
            from mcp_platform.application.subscriptions import SubscriptionsFeature

            added.append(SubscriptionsFeature(self.services.notifications, resources.readable))
        if self.services.tasks is not None:
            from mcp_platform.application.tasks.service import TasksFeature

            added.append(TasksFeature(self.services.tasks))
        return added

    def capabilities(self, modern: bool) -> dict[str, Any]:
        return self.dispatch.capabilities(modern)

    def initialize(self, request: Request) -> Initialized:
        """2025 initialize: what the new transport session keeps, and the InitializeResult."""
        return self.dispatch.initialize(request, STORED_FORM)

    def handler_for(self, method: str, modern: bool) -> Handler:
        return self.dispatch.handler_for(method, modern)

    def bind(self, request: Request, call: RequestContext) -> BoundRequest:
        """Match the request to what serves it (the dispatch table), with no I/O and no refusal:
        what can refuse it runs in ``admit``, after whatever checks the transport makes on the
        binding's word."""
        binder = self.dispatch.binder_for(request.method)
        if binder is not None:
            return binder(request, call)
        return BoundRequest(request, admit=lambda: self._admit(request, call))

    def bind_tool_call(self, request: Request, call: RequestContext) -> BoundRequest:
        try:
            # Preparing reads nothing the transport-session check changes, so it may run first.
            prepared = self.runner.prepare(request, call, self.catalog.tools)
        except JsonRpcError as refused:
            name = request.params.get("name")
            named = self.catalog.tools.get(name) if isinstance(name, str) else None
            mirrors = named.mirrored_headers if named is not None else ()
            return BoundRequest(request=request, admit=refusal(refused), streams=True, header_mirrors=mirrors)
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
            header_mirrors=prepared.spec.mirrored_headers,
        )

    async def _admit_tool_call(self, request: Request, prepared: PreparedCall, call: RequestContext) -> Work:
        if call.access is not None:
            self._authorize(prepared, call)  # before anything is read, run or written
        loaded = await self.runner.load(prepared, call)
        require_client_capabilities(prepared.spec, call)
        tasks = self._task_runner(loaded, call)
        if tasks is not None:
            kept = tasks.task_request(request, prepared, call)  # admitted before anything
            await self._open_interaction(request, call, consume=True)  # the questions before it starts

            async def start() -> dict[str, Any]:
                task = self._start_task(tasks, prepared, call, kept)
                return self._finish(await self._answered(request, call, task), call)

            return start
        # A replay of a committed call is answered from its marker: its state is not used up.
        await self._open_interaction(request, call, consume=loaded.prior_result is None)

        async def work() -> dict[str, Any]:
            return self._finish(await self._answered(request, call, self.runner.run(loaded, call)), call)

        return work

    def _authorize(self, prepared: PreparedCall, call: RequestContext) -> None:
        """The policies' word on this call, its arguments included; a refusal is answered -31010
        and its event records it (the denial is the call's only trace: nothing ran)."""
        assert call.access is not None
        try:
            call.access.require(CALL_TOOL, prepared.spec.name, prepared.arguments)
        except JsonRpcError as refused:
            if refused.code == FORBIDDEN:
                self.runner.record_refusal(prepared, call, refused)
            raise

    async def _admit(self, request: Request, call: RequestContext) -> Work:
        handler = self.handler_for(request.method, call.modern)
        await self._open_interaction(request, call, consume=True)

        async def simple() -> dict[str, Any]:
            return self._finish(await self._answered(request, call, handler(request, call)), call)

        return simple

    def _task_runner(self, loaded: LoadedCall, call: RequestContext) -> TaskService | None:
        """Tasks extension: the service that hands this call to the worker, or None when it runs
        here (a replay or a refused argument is answered here)."""
        prepared = loaded.prepared
        if prepared.spec.task_support == "forbidden" or loaded.prior_result is not None:
            return None
        tasks = self.services.tasks
        if tasks is None:
            if prepared.spec.task_support == "required":
                from mcp_platform.protocol.tasks import missing_extension

                raise missing_extension(f"Tool {prepared.spec.name} runs only as a task, and tasks are not deployed")
            return None
        wanted = prepared.invalid_arguments is None and tasks.wants_task(prepared.spec, call)
        return tasks if wanted else None

    async def _start_task(
        self, tasks: TaskService, prepared: PreparedCall, call: RequestContext, kept: TaskRequest
    ) -> dict[str, Any]:
        """The tool's ``ask_first`` questions (an InputRequiredResult until answered), then the task."""
        answers: dict[str, JSONObject] = {}
        if prepared.spec.ask_first is not None:
            questions = prepared.spec.ask_first(**prepared.arguments)
            context = ToolContext.for_request(call, self.services)
            answers = await context.ask_all(questions)
        created: dict[str, Any] = await tasks.start(kept, call, answers)
        return created

    async def _open_interaction(self, request: Request, call: RequestContext, *, consume: bool) -> None:
        """How the request's questions reach its client (``interactive``): 2026, rounds on the
        methods that may answer InputRequiredResult (a bad requestState is refused here, before
        any work); 2025, requests on the call's stream. Loaded on first use, not at start."""
        if request.method not in INPUT_METHODS:
            return  # nothing else may ask (completion, lists, ...): ctx.elicit there is refused
        if call.modern:
            call.channel.interaction = await _rounds().open_round(
                request, call, self.services.interactive, consume=consume
            )
        elif call.transport_session_id is not None and self.services.interactive is not None:
            call.channel.interaction = self.services.interactive.outbound.for_call(call)

    async def _answered(
        self, request: Request, call: RequestContext, work: Awaitable[dict[str, Any]]
    ) -> dict[str, Any]:
        """The work's result; a run that stopped for input answers an InputRequiredResult."""
        try:
            return await work
        except InputRequired as needed:
            result: dict[str, Any] = await _rounds().input_required_result(
                needed, request, call, self.services.interactive
            )
            return result

    async def handle(self, request: Request, call: RequestContext) -> dict[str, Any]:
        """The request's result, or its JsonRpcError: the transport-free path."""
        work = await self.bind(request, call).admit()
        return await work()

    def _finish(self, result: dict[str, Any], call: RequestContext) -> dict[str, Any]:
        return self.dispatch.finish(result, call)


class ToolCallsFeature(Feature):
    """``tools/call``, in both eras: the tool-call runner, a task of the tasks extension, or a
    refusal, bound by the server (its questions, its stream, its transport-session check). Served
    whenever tools/list is (always); the capability is the catalog's tools feature's."""

    capability_key = "tools"

    def __init__(self, server: McpServer) -> None:
        self.server = server

    def binders(self) -> Mapping[str, Binder]:
        return {"tools/call": self.server.bind_tool_call}


class LogLevelFeature(Feature):
    """2025 ``logging/setLevel``: the level is kept with the transport session (2026-07-28
    carries it on each request instead)."""

    capability_key = "logging"

    def __init__(self, runner: ToolCallRunner) -> None:
        self.runner = runner

    def capability(self, modern: bool) -> dict[str, Any] | None:
        return None if modern else {}

    def legacy_methods(self) -> Mapping[str, Handler]:
        return {"logging/setLevel": self._set_level}

    async def _set_level(self, request: Request, call: RequestContext) -> dict[str, Any]:
        level = request.params.get("level")
        if level not in LOG_LEVELS:
            raise JsonRpcError(INVALID_PARAMS, f"level must be one of {', '.join(LOG_LEVELS)}")
        if call.transport_session is not None:
            await self.runner.set_log_level(call.transport_session, level, call.principal)
        return {}


@functools.cache
def _rounds() -> ModuleType:
    """The 2026 multi-round module, imported on the first request that may ask (not at start)
    and then held: a function-level ``from ... import`` costs ~2 us on every call."""
    from mcp_platform.application.interactive import rounds

    return rounds
