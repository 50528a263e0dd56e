"""The endpoint's side of the tasks extension: create a task for a tools/call, and serve
``tasks/get``, ``tasks/update`` and ``tasks/cancel`` on any instance.

A task-supporting tool called by a client that declared the extension is not run by the
endpoint: the task item is written first (the answer never names a task that does not exist),
then one SQS message hands it to the worker function, and the endpoint answers the
CreateTaskResult at once. Critical path: one PutItem and one SendMessage (inline while the request is alone on the
process, as every blocking call on the request path: ``mcp_platform.application.blocking``).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp_platform.application.blocking import IN_THREAD, Blocking
from mcp_platform.application.effects import unavailable
from mcp_platform.application.stored_form import STORED_FORM
from mcp_platform.application.tasks.budget import admit_answers, admit_request
from mcp_platform.application.tasks.ports import TaskNotFound, TaskQueue, TaskRepository, TaskTransitionRefused
from mcp_platform.protocol.features import Feature, Handler
from mcp_platform.protocol.handshake import check_stored_capabilities
from mcp_platform.protocol.jsonrpc import INVALID_PARAMS, JsonRpcError, Request
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.protocol.storability import Inadmissible
from mcp_platform.protocol.tasks import EXTENSION_ID, Task, TaskRequest, declares_tasks, missing_extension
from mcp_platform.protocol.versions import CLIENT_CAPABILITIES_META_KEY

if TYPE_CHECKING:
    from mcp_platform.protocol.preparation import PreparedCall
    from mcp_platform.protocol.tools import ToolSpec

logger = logging.getLogger(__name__)
TASK_ID_BYTES = 24  # 192 bits: a task id cannot be guessed (and is owner-checked besides)
MAX_TASK_ID = 128


class TaskService:
    def __init__(
        self,
        store: TaskRepository,
        queue: TaskQueue,
        *,
        ttl_seconds: int = 3600,
        blocking: Blocking = IN_THREAD,
    ) -> None:
        self.store = store
        self.blocking = blocking
        self.queue = queue
        self.ttl_seconds = ttl_seconds

    # -- tools/call ----------------------------------------------------------------------------
    def wants_task(self, spec: ToolSpec, call: RequestContext) -> bool:
        """The server decides: a task whenever the tool supports one and the client declared the
        extension; a task-required tool without it is refused (-32021)."""
        if spec.task_support == "forbidden":
            return False
        # 2026-07-28 only, and per request: the 2025 wire does not define the extension.
        if call.modern and declares_tasks(call.client_capabilities):
            return True
        if spec.task_support == "required":
            raise missing_extension(f"Tool {spec.name} runs only as a task")
        return False

    def task_request(self, request: Request, prepared: PreparedCall, call: RequestContext) -> TaskRequest:
        """What the task will keep of the call, admitted (tasks.budget): refused before anything
        runs or is written, so a 2026 caller gets its 400 and its requestState is not used up."""
        # The call itself; the rounds that lead to it (inputResponses, requestState) are consumed.
        params: dict[str, Any] = {k: request.params[k] for k in ("name", "arguments") if k in request.params}
        meta = {k: v for k, v in request.meta.items() if k == "progressToken"}
        task_request = TaskRequest(
            params={**params, "_meta": meta},
            tool_call_id=prepared.tool_call_id,
            protocol_version=call.protocol_version,
            modern=call.modern,
            client_capabilities=call.client_capabilities,
            transport_session_id=call.transport_session_id,
            traceparent=call.trace.traceparent if call.trace is not None else None,
            tracestate=call.trace.state if call.trace is not None else None,
        )
        if task_request.client_capabilities is not None:
            try:  # kept as 2025 initialize keeps them
                path = f"_meta[{CLIENT_CAPABILITIES_META_KEY!r}]"
                check_stored_capabilities(task_request.client_capabilities, STORED_FORM, path)
            except Inadmissible as exc:
                raise JsonRpcError(INVALID_PARAMS, str(exc)) from exc
        admit_request(task_request.to_map())
        return task_request

    async def start(
        self, task_request: TaskRequest, call: RequestContext, answers: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Write the task (with the answers gathered before it), queue it, answer CreateTaskResult."""
        admit_answers(answers or {})  # each admitted by check_answer; together within the budget
        task = self.store.new_task(secrets.token_urlsafe(TASK_ID_BYTES), call.principal, task_request, self.ttl_seconds)
        task.input_responses = dict(answers or {})
        await self.blocking(self.store.create, task)
        try:
            await self.blocking(self.queue.enqueue, task.task_id)
        except Exception as exc:
            logger.exception("task %s could not be queued", task.task_id)
            error = {"code": -31004, "message": "The task could not be queued; call the tool again"}
            await self.blocking(_fail_quietly, self.store, task.task_id, error)
            raise unavailable("The task could not be queued; retry the call shortly") from exc
        return task.created()

    # -- tasks/* methods -----------------------------------------------------------------------
    async def get(self, request: Request, call: RequestContext) -> dict[str, Any]:
        task = await self._load(request, call)
        return task.detailed()

    async def update(self, request: Request, call: RequestContext) -> dict[str, Any]:
        task = await self._load(request, call)
        responses = request.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise JsonRpcError(INVALID_PARAMS, "params.inputResponses must be an object")
        if task.status != "input_required" or not task.input_requests:
            return {}  # nothing is asked (answered already, or terminal): acknowledged, no effect
        answers = _checked(task.input_requests, responses)
        if not answers:
            return {}  # only keys that are not outstanding: ignored
        admit_answers({**task.input_responses, **answers})
        try:
            updated = await self.blocking(self.store.deliver_input, task, answers)
        except TaskTransitionRefused:
            return {}  # another update took this round first (or the task was cancelled)
        if updated.status == "working":  # every question answered: the next run starts
            await self.blocking(self.queue.enqueue, task.task_id)
        return {}

    async def cancel(self, request: Request, call: RequestContext) -> dict[str, Any]:
        task = await self._load(request, call)
        if not task.terminal:
            # Reaching a terminal status first makes the cancel a no-op, with the same ack.
            with contextlib.suppress(TaskTransitionRefused):
                await self.blocking(self.store.cancel, task.task_id, call.principal)
        return {}

    async def _load(self, request: Request, call: RequestContext) -> Task:
        if not declares_tasks(call.client_capabilities):
            raise missing_extension(f"{request.method} needs the tasks extension")
        task_id = request.params.get("taskId")
        if not isinstance(task_id, str) or not 0 < len(task_id) <= MAX_TASK_ID:
            raise JsonRpcError(INVALID_PARAMS, "params.taskId must be a task id string")
        try:
            return await self.blocking(self.store.get, task_id, call.principal)
        except TaskNotFound as exc:
            raise JsonRpcError(INVALID_PARAMS, f"Unknown task: {task_id}") from exc


class TasksFeature(Feature):
    """The tasks extension's methods (``tasks/get``, ``tasks/update``, ``tasks/cancel``; the task
    creation itself is part of tools/call): built where the task worker is deployed. The removed
    methods ``tasks/result`` and ``tasks/list`` are not served (-32601)."""

    capability_key = "extensions"

    def __init__(self, tasks: TaskService) -> None:
        self.tasks = tasks

    def capability(self, modern: bool) -> dict[str, Any] | None:
        return {EXTENSION_ID: {}} if modern else None  # undefined on the 2025 wire

    def modern_methods(self) -> Mapping[str, Handler]:
        return {"tasks/get": self.tasks.get, "tasks/update": self.tasks.update, "tasks/cancel": self.tasks.cancel}


def _checked(requested: dict[str, Any], responses: dict[str, Any]) -> dict[str, Any]:
    """The answers to questions the task asked, each of its question's result shape (-32602)."""
    from mcp_platform.protocol.interactive import InvalidInputResponse, check_answer  # first use, not start

    answers = {}
    for key, answer in responses.items():
        question = requested.get(key)
        if not isinstance(question, dict):
            continue  # not asked in this round: ignored, as a stale answer would be
        try:
            answers[key] = check_answer(str(question.get("method")), answer, STORED_FORM)
        except InvalidInputResponse as exc:
            raise JsonRpcError(INVALID_PARAMS, f"inputResponses[{key!r}] {exc}") from exc
    return answers


def _fail_quietly(store: TaskRepository, task_id: str, error: dict[str, Any]) -> None:
    try:
        store.finish(task_id, "failed", error=error)
    except Exception:
        logger.exception("task %s: could not record that it was never queued", task_id)
