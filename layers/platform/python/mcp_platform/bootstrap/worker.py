"""Composition root of the task worker function: settings + clients in, Lambda handler out.

Built once per process (module scope of ``functions/endpoint/task_worker.py``) and reused by
every warm invocation, the event loop included, so clients and the runner's per-session state
survive between invocations. The local platform calls it too (one handler per emulated
execution environment), and tests inject their clients.

The SQS batch is Powertools' ``BatchProcessor``: each message, an ``SQSRecord``, is one task run
on the handler's loop; a failed one is reported in ``batchItemFailures`` (it comes back, and in
the end goes to the worker DLQ), and a batch where every message failed is answered the same way,
never as a function error. The store's counters are EMF lines through Powertools
(``PowertoolsMetricsWriter``).
"""

from __future__ import annotations

import asyncio
from types import ModuleType
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType

from mcp_platform.adapters.dynamodb.tasks import TaskStore
from mcp_platform.adapters.powertools import PowertoolsMetricsWriter
from mcp_platform.adapters.sqs.task_queue import task_message
from mcp_platform.application.task_worker import TaskWorker
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.bootstrap.batches import process_batch
from mcp_platform.bootstrap.runtime import build_runtime
from mcp_platform.bootstrap.telemetry import build_spans
from mcp_platform.config import Settings

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import EphemeralMetrics
    from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

# A run is stopped this long before the invocation's own deadline, so its outcome is recorded.
TIMEOUT_MARGIN_SECONDS = 30


def build_handler(
    settings: Settings, *packages: ModuleType, batch_metrics: EphemeralMetrics | None = None, **clients: Any
) -> TaskHandler:
    """The SQS handler serving ``packages`` (the endpoint's own tool packages); ``batch_metrics``:
    the function's Powertools metric set, where each invocation counts its messages and failures."""
    metrics = PowertoolsMetricsWriter(settings.metrics_namespace, settings.service_name)  # conflicts, throttles, DLQ
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
    return TaskHandler(runtime.runner, worker, metrics=batch_metrics)


class TaskHandler:
    """The Lambda handler: every warm invocation runs on the same event loop. ``close`` releases
    the loop (its file descriptors) when a handler is retired: the local platform retires one on
    each reload of the features; Lambda never does."""

    def __init__(self, runner: ToolCallRunner, worker: TaskWorker, *, metrics: EphemeralMetrics | None = None) -> None:
        self._runner = runner
        self._worker = worker
        self._metrics = metrics
        self._loop = asyncio.new_event_loop()
        self._processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

    def __call__(self, event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
        # One attempt may use what is left of this invocation (a tool may declare less, max_seconds).
        remaining = context.get_remaining_time_in_millis() / 1000 - TIMEOUT_MARGIN_SECONDS
        self._runner.max_call_seconds = max(1.0, remaining)
        try:
            return process_batch(
                event, context, processor=self._processor, record_handler=self._run, metrics=self._metrics
            )
        finally:
            self._loop.run_until_complete(self._worker.finish())

    def _run(self, record: SQSRecord) -> None:
        """One message: its task's run, on the handler's loop (raises when it failed)."""
        self._loop.run_until_complete(self._worker.process(task_message(record.message_id, record.get("body"))))

    def close(self) -> None:
        self._loop.close()
