"""Composition root of the task worker function: settings + clients in, Lambda handler out.

Built once per process (module scope of ``functions/endpoint/task_worker.py``) and reused by
every warm invocation, the event loop included, so clients and the runner's per-session state
survive between invocations. The local platform calls it too (one handler per emulated
execution environment), and tests inject their clients.
"""

from __future__ import annotations

import asyncio
from types import ModuleType
from typing import Any

from mcp_platform.adapters.dynamodb.tasks import TaskStore
from mcp_platform.adapters.sqs.task_queue import batch_response, task_messages
from mcp_platform.application.metrics import MetricsWriter
from mcp_platform.application.task_worker import TaskWorker
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.bootstrap.runtime import build_runtime
from mcp_platform.bootstrap.telemetry import build_spans
from mcp_platform.config import Settings

# A run is stopped this long before the invocation's own deadline, so its outcome is recorded.
TIMEOUT_MARGIN_SECONDS = 30


def build_handler(settings: Settings, *packages: ModuleType, **clients: Any) -> TaskHandler:
    """The SQS handler serving ``packages`` (the endpoint's own tool packages)."""
    metrics = MetricsWriter(settings.metrics_namespace, settings.service_name)  # conflicts, throttles, DLQ
    runtime = build_runtime(settings, *packages, metrics=metrics, **clients)
    store = TaskStore(settings.session_table, runtime.store.gateway, clock=runtime.store.clock)
    producer = runtime.producer

    async def flush() -> None:
        if producer is not None and len(producer):
            await producer.flush_async()

    worker = TaskWorker(
        store,
        runtime.runner,
        runtime.catalog,
        flush,
        max_attempts=settings.task_max_attempts,
        spans=build_spans(settings),
        blocking=runtime.blocking,
    )
    return TaskHandler(runtime.runner, worker)


class TaskHandler:
    """The Lambda handler: every warm invocation runs on the same event loop. ``close`` releases
    the loop (its file descriptors) when a handler is retired: the local platform retires one on
    each reload of the features; Lambda never does."""

    def __init__(self, runner: ToolCallRunner, worker: TaskWorker) -> None:
        self._runner = runner
        self._worker = worker
        self._loop = asyncio.new_event_loop()

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        # One attempt may use what is left of this invocation (a tool may declare less, max_seconds).
        remaining = context.get_remaining_time_in_millis() / 1000 - TIMEOUT_MARGIN_SECONDS
        self._runner.max_call_seconds = max(1.0, remaining)
        failed = self._loop.run_until_complete(self._worker.handle(task_messages(event)))
        return batch_response(failed)

    def close(self) -> None:
        self._loop.close()
