"""A task's trace: the worker's run of a task is a span of the trace of the request that created
it (``TaskRequest.traceparent``), so its log lines, its tool-call event and its commit carry that
trace id; a task without a valid one runs under a new trace; nothing of it outlives the message."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.application.metrics import JsonLogFormatter
from mcp_platform.application.spans import Span, SpanKind, Spans
from mcp_platform.application.task_worker import TaskWorker
from mcp_platform.application.tasks.ports import TaskMessage
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol import trace_context
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.tasks import WORKING, Task, TaskRequest
from mcp_platform.protocol.tools import tool
from tests.support.services import make_services

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
ENDPOINT_SPAN = "00f067aa0ba902b7"
worker_tool_log = logging.getLogger("tests.task_tool")


@tool(description="Logs a line and answers.", task="optional")
async def slow_echo(text: str) -> str:
    worker_tool_log.info("running %s", text)
    return text


@dataclass
class MemoryTasks:
    """The task items in memory (the worker's side of ``TaskRepository``)."""

    tasks: dict[str, Task] = field(default_factory=dict)

    def get(self, task_id: str, owner: str | None = None) -> Task:
        return self.tasks[task_id]

    def begin_attempt(self, task_id: str) -> Task:
        self.tasks[task_id] = replace(self.tasks[task_id], attempts=self.tasks[task_id].attempts + 1)
        return self.tasks[task_id]

    def finish(self, task_id: str, status: str, *, result: Any = None, error: Any = None, message: Any = None) -> Task:
        self.tasks[task_id] = replace(self.tasks[task_id], status=status, result=result, error=error)
        return self.tasks[task_id]

    def note(self, task_id: str, message: str) -> None:
        return None


@dataclass
class Events:
    records: list[bytes] = field(default_factory=list)

    def emit(self, event: ToolCallEvent) -> None:
        self.records.append(event.to_bytes())


def run_task(traceparent: str | None, spans: Spans | None = None) -> tuple[ToolCallEvent, dict[str, Any], MemoryTasks]:
    request = TaskRequest(
        {"name": "slow_echo", "arguments": {"text": "hi"}},
        "call-1",
        "2026-07-28",
        True,
        traceparent=traceparent,
    )
    store = MemoryTasks({"t1": Task("t1", "alice", WORKING, request, 0.0, 0.0, 2_000_000_000, 600_000)})
    events = Events()
    catalog = Catalog()
    catalog.add(slow_echo)

    async def flush() -> None:
        return None

    worker = TaskWorker(store, ToolCallRunner(make_services(), events), catalog, flush, spans=spans)  # type: ignore[arg-type]
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setFormatter(JsonLogFormatter("task-worker"))
    worker_tool_log.addHandler(handler)
    worker_tool_log.setLevel(logging.INFO)
    try:
        failed = asyncio.run(worker.handle([TaskMessage(message_id="m1", task_id="t1")]))
    finally:
        worker_tool_log.removeHandler(handler)
    assert failed == []
    (event,) = (ToolCallEvent.from_bytes(record) for record in events.records)
    (line,) = (json.loads(text) for text in log.getvalue().splitlines())
    return event, line, store


def test_a_tasks_run_continues_the_trace_of_the_request_that_created_it() -> None:
    # Given a task created by a request whose span was ENDPOINT_SPAN of TRACE_ID
    # When the worker runs it
    event, line, store = run_task(f"00-{TRACE_ID}-{ENDPOINT_SPAN}-01")
    # Then the tool's log line and the call's event name the trace, under the run's own span
    assert store.tasks["t1"].status == "completed"
    assert event.trace_id == line["trace_id"] == TRACE_ID
    assert event.span_id == line["span_id"] != ENDPOINT_SPAN
    # And nothing of the run's span is current once the message is handled
    assert trace_context.current() is None


@pytest.mark.parametrize("traceparent", [None, "not-a-traceparent"])
def test_a_task_without_a_valid_trace_runs_under_a_new_one(traceparent: str | None) -> None:
    # Given a task stored without a (valid) traceparent (written before traces were kept)
    # When the worker runs it
    event, line, _ = run_task(traceparent)
    # Then its lines and its event still share one trace: a new one
    assert event.trace_id is not None and trace_context.is_trace_id(event.trace_id)
    assert event.trace_id == line["trace_id"] != TRACE_ID


class RecordingExporter:
    def __init__(self) -> None:
        self.spans: list[Span] = []

    def export(self, spans: Sequence[Span]) -> None:
        self.spans += spans


def test_with_span_export_on_a_run_is_exported_as_the_span_its_lines_name() -> None:
    # Given span export on, and a task created by a request whose span was ENDPOINT_SPAN
    exporter = RecordingExporter()
    spans = Spans(exporter)
    # When the worker runs it
    event, line, _ = run_task(f"00-{TRACE_ID}-{ENDPOINT_SPAN}-01", spans)
    # Then the run's span was exported before the handler returned, with the ids its lines carry,
    # a child of the request that created the task
    (span,) = exporter.spans
    assert (span.trace.trace_id, span.trace.span_id) == (line["trace_id"], line["span_id"]) == (TRACE_ID, event.span_id)
    assert span.trace.parent_id == ENDPOINT_SPAN
    assert (span.name, span.kind, span.error_type) == ("tasks/run", SpanKind.CONSUMER, None)
    assert span.attributes["mcp.task.id"] == "t1" and len(spans) == 0
