"""The task worker: runs queued tasks with the endpoint's own runner, tools and ``ToolContext``.

Fed by the task queue (SQS, one message per task run: the first, and one after each
``tasks/update``). Per message:

1. read the task; anything not ``working`` (cancelled, waiting for input, finished, expired) is
   acknowledged and dropped: a stale or duplicate message never runs a tool;
2. take an attempt (``attempts + 1``); past ``max_attempts`` (the worker crashed or timed out
   that many times) the task is failed instead of run again;
3. run the call exactly as the endpoint would (``ToolCallRunner``: same idempotency, effects and
   commit). It commits under the task's tool-call id, so a retry after a crash that followed the
   commit replays the committed result instead of running the tool twice (D4);
4. record the outcome: ``completed`` with the result (its event flushed first, K10),
   ``input_required`` with the questions (``tasks/update`` answers them and queues the next
   run, which sees every answer so far), or ``failed`` with the JSON-RPC error. A cancelled
   task stays cancelled (conditional writes).

While the tool runs, the task item is read every ``cancel_poll_seconds``: a ``tasks/cancel``
from any instance sets the tool's ``ctx.cancelled`` (cooperative), and a tool that ignores it
is cancelled ``cancel_grace_seconds`` later. Transient failures (throttling, the store briefly
unavailable) are reported as batch item failures: SQS redelivers after the visibility timeout,
and after the queue's maxReceiveCount the message goes to the worker DLQ.

Each run is a span of the trace of the request that created the task (``TaskRequest.traceparent``):
its log lines, its tool-call event and its commit carry that trace id, and with span export on
(``application.spans``) the run is exported as that span before the invocation returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mcp_platform.application.blocking import IN_THREAD, Blocking
from mcp_platform.application.stored_form import STORED_FORM
from mcp_platform.application.tasks.budget import questions_refusal
from mcp_platform.application.tasks.ports import TaskMessage, TaskNotFound, TaskRepository, TaskTransitionRefused
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol import trace_context
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.input_required import InputRequired
from mcp_platform.protocol.interactive import InputRequest, check_answer
from mcp_platform.protocol.jsonrpc import TOOL_FAILED, UNAVAILABLE, JSONObject, JsonRpcError, Request
from mcp_platform.protocol.request_context import ClientChannel, Notify, RequestContext, TransportSession
from mcp_platform.protocol.tasks import CANCELLED, COMPLETED, FAILED, WORKING, Task

if TYPE_CHECKING:
    from mcp_platform.application.spans import Spans

logger = logging.getLogger(__name__)
Flush = Callable[[], Awaitable[None]]


class TaskRetry(Exception):
    """A transient failure: the message is redelivered (and, in the end, dead-lettered)."""


class TaskAnswers:
    """The interaction of a task run: questions answered from the task's ``inputResponses``;
    an unanswered one stops the run (``InputRequired``), as a 2026 round does."""

    def __init__(self, answers: dict[str, Any], round_: int) -> None:
        self.answers = answers
        self.round = round_

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, JSONObject]:
        missing = {key: request for key, request in requests.items() if key not in self.answers}
        if missing:
            raise InputRequired(missing)
        return {key: check_answer(request.method, self.answers[key], STORED_FORM) for key, request in requests.items()}


class TaskWorker:
    def __init__(
        self,
        store: TaskRepository,
        runner: ToolCallRunner,
        catalog: Catalog,
        flush: Flush,
        *,
        max_attempts: int = 3,
        cancel_poll_seconds: float = 1.0,
        cancel_grace_seconds: float = 5.0,
        spans: Spans | None = None,
        blocking: Blocking = IN_THREAD,
    ) -> None:
        self.spans = spans
        self.blocking = blocking
        self.store = store
        self.runner = runner
        self.catalog = catalog
        self.flush = flush
        self.max_attempts = max_attempts
        self.cancel_poll_seconds = cancel_poll_seconds
        self.cancel_grace_seconds = cancel_grace_seconds

    async def handle(self, messages: Sequence[TaskMessage]) -> list[str]:
        """Runs each delivered task; the ids of the messages that failed (they come back, and
        after the queue's receives end in its DLQ; an unreadable one always fails)."""
        failures = []
        try:
            for message in messages:
                try:
                    await self.process(message)
                except Exception:
                    failures.append(message.message_id)
        finally:
            await self.finish()
        return failures

    async def process(self, message: TaskMessage) -> None:
        """Runs one delivered task, as a span of its task's trace; raises (logged) when the
        message failed: it comes back, and after the queue's receives ends in its DLQ. The
        batch's :meth:`finish` follows its last message."""
        scope = trace_context.scope()  # each message's run is a span of its task's trace
        started_ns = time.time_ns()
        error_type = None
        try:
            if message.task_id is None:
                raise ValueError("task message without a taskId")
            await self.run(message.task_id)
        except Exception as exc:
            logger.exception("task message %s failed; it will be redelivered", message.message_id)
            error_type = type(exc).__name__
            raise
        finally:
            if self.spans is not None:
                self._record_span(message, started_ns, error_type)
            trace_context.end_scope(scope)

    async def finish(self) -> None:
        """After a batch, before the invocation ends: the runs' background work settled, their
        tool events flushed, their spans exported."""
        await self.runner.settle()
        await self.flush()  # the tool events of this batch, before the invocation ends
        if self.spans is not None:
            await self.blocking(self.spans.flush)  # the runs' spans, before it ends too

    def _record_span(self, message: TaskMessage, started_ns: int, error_type: str | None) -> None:
        """The run as the span its log lines name (none if the task was not found: no trace)."""
        from mcp_platform.application.spans import Span, SpanKind

        trace = trace_context.current()
        if trace is None or self.spans is None:
            return
        attributes = {"messaging.message.id": message.message_id, "mcp.task.id": message.task_id or ""}
        self.spans.add(
            Span(
                name="tasks/run",
                trace=trace,
                start_ns=started_ns,
                end_ns=time.time_ns(),
                kind=SpanKind.CONSUMER,
                attributes=attributes,
                error_type=error_type,
            )
        )

    async def run(self, task_id: str) -> None:
        try:
            task = await self.blocking(self.store.get, task_id)
        except TaskNotFound:
            logger.info("task %s is gone (expired): message dropped", task_id)
            return
        # From here on the run's log lines, tool-call event and commit carry the task's trace
        # (the request that created it), under a span of this run's own.
        trace = trace_context.continue_trace(task.request.traceparent, task.request.tracestate)
        trace_context.activate(trace)
        if task.status != WORKING:
            return  # cancelled, waiting for input, or done: nothing to run
        if task.attempts >= self.max_attempts:
            message = f"The task's worker failed {task.attempts} times; it was not run again"
            await self._finish(task_id, FAILED, error={"code": TOOL_FAILED, "message": message}, message=message)
            return
        try:
            task = await self.blocking(self.store.begin_attempt, task_id)
        except TaskTransitionRefused:
            return  # cancelled between the read and now
        call = _call_of(task, trace=trace, notify=self._status_notes(task_id))
        execution = asyncio.ensure_future(self._execute(task, call))
        watcher = asyncio.ensure_future(self._watch(task_id, call, execution))
        try:
            await execution
        except asyncio.CancelledError:
            if not call.cancelled.is_set():
                raise  # the worker itself is being stopped, not the task
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _execute(self, task: Task, call: RequestContext) -> None:
        request = Request("tools/call", task.request.params, None)
        try:
            prepared = self.runner.prepare(request, call, self.catalog.tools)
            # The task's call id, which a redelivered message carries again (its commit then finds
            # the first one's marker); progress always reaches the task (its statusMessage).
            progress_token = prepared.progress_token if prepared.progress_token is not None else task.task_id
            prepared = dataclasses.replace(
                prepared, tool_call_id=task.request.tool_call_id, progress_token=progress_token, replayable=True
            )
            result = await self.runner.run(await self.runner.load(prepared, call), call)
        except InputRequired as needed:
            questions = {key: question.to_wire() for key, question in needed.requests.items()}
            refused = questions_refusal(str(task.request.params.get("name")), questions)
            if refused is not None:  # recorded as the outcome: the task cannot hold these questions
                await self._finish(task.task_id, FAILED, error=refused, message=refused["message"])
                return
            with contextlib.suppress(TaskTransitionRefused):
                await self.blocking(self.store.await_input, task.task_id, questions, "Waiting for input")
            return
        except JsonRpcError as error:
            if error.code == UNAVAILABLE:
                raise TaskRetry(error.message) from error
            await self._finish(task.task_id, FAILED, error=error.to_error(), message=error.message)
            return
        # The run's event on the stream before the task's outcome is (K10): once the task reads
        # completed, a redelivered message runs nothing, so an event flushed only after the
        # finish would die with a worker killed in between. Killed before the finish, the task
        # runs again and emits again under the same id, which ingest counts once.
        await self.runner.settle()
        await self.flush()
        await self._finish(task.task_id, COMPLETED, result=result)

    async def _watch(self, task_id: str, call: RequestContext, execution: asyncio.Future[None]) -> None:
        """Until the task is cancelled: then its run is told, and stopped after the grace."""
        while True:
            await asyncio.sleep(self.cancel_poll_seconds)
            try:
                status = (await self.blocking(self.store.get, task_id)).status
            except TaskNotFound:
                status = CANCELLED  # expired under the run: nobody can read its result any more
            except Exception:
                logger.warning("task %s: cancel check failed; checking again", task_id, exc_info=True)
                continue
            if status == CANCELLED:
                call.cancelled.set()
                with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(execution), self.cancel_grace_seconds)
                if not execution.done():
                    execution.cancel()
                return

    def _status_notes(self, task_id: str) -> Callable[[dict[str, Any]], Awaitable[None]]:
        """The run's progress messages and logs become the task's ``statusMessage``, at most one
        write per ``cancel_poll_seconds`` (a chatty tool must not turn into a write storm)."""
        loop = asyncio.get_running_loop()
        last_write = -float("inf")

        async def note(message: dict[str, Any]) -> None:
            nonlocal last_write
            params = message.get("params") or {}
            text = params.get("message") if message.get("method") == "notifications/progress" else params.get("data")
            if text is None or loop.time() - last_write < self.cancel_poll_seconds:
                return
            last_write = loop.time()
            summary = text if isinstance(text, str) else json.dumps(text, default=str)
            with contextlib.suppress(TaskTransitionRefused):
                await self.blocking(self.store.note, task_id, summary)

        return note

    async def _finish(self, task_id: str, status: str, **outcome: Any) -> None:
        try:
            await self.blocking(self.store.finish, task_id, status, **outcome)
        except TaskTransitionRefused:
            logger.info("task %s was cancelled while it ran; its outcome is not recorded", task_id)


def _call_of(task: Task, *, trace: trace_context.TraceContext, notify: Notify) -> RequestContext:
    """The task's request as it came, its questions answered by what the task holds and its
    notifications going to the task's status."""
    request = task.request
    session_id = request.transport_session_id
    return RequestContext(
        principal=task.owner,
        protocol_version=request.protocol_version,
        modern=request.modern,
        transport=TransportSession(session_id) if session_id is not None else None,
        declared_log_level=request.log_level,
        declared_capabilities=request.client_capabilities,
        trace=trace,
        channel=ClientChannel(notify=notify, interaction=TaskAnswers(task.input_responses, task.round)),
    )
