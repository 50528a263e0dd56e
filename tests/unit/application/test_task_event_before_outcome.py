"""K10 in the task worker: a run's event is flushed before the task reads ``completed``.

Once the task is completed a redelivered message runs nothing, so a worker killed between the
outcome's write and a later flush would lose the event for good; flushed first, a worker killed
before the outcome's write runs the task again, and ingest counts its event id once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.application.task_worker import TaskWorker
from mcp_platform.application.tasks.ports import TaskMessage
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.tasks import WORKING, Task, TaskRequest
from tests.support.services import make_services
from tests.unit.application.test_task_trace import MemoryTasks, slow_echo


@dataclass
class BufferedEvents:
    """The producer's buffer, and the task's status each time it was flushed."""

    buffered: list[ToolCallEvent] = field(default_factory=list)
    flushed: list[tuple[str, str]] = field(default_factory=list)  # (event id, the task's status then)


def test_k10_a_tasks_event_is_on_the_stream_before_its_outcome_is_recorded() -> None:
    # Given a working task of a stateless tool, and a producer that notes the task's status at each flush
    request = TaskRequest({"name": "slow_echo", "arguments": {"text": "hi"}}, "call-1", "2026-07-28", True)
    store = MemoryTasks({"t1": Task("t1", "alice", WORKING, request, 0.0, 0.0, 2_000_000_000, 600_000)})
    events = BufferedEvents()
    catalog = Catalog()
    catalog.add(slow_echo)

    async def flush() -> None:
        events.flushed += [(event.event_id, store.tasks["t1"].status) for event in events.buffered]
        events.buffered.clear()

    class Sink:
        def emit(self, event: ToolCallEvent) -> None:
            events.buffered.append(event)

    worker = TaskWorker(store, ToolCallRunner(make_services(), Sink()), catalog, flush)  # type: ignore[arg-type]
    # When the worker runs it
    assert asyncio.run(worker.handle([TaskMessage(message_id="m1", task_id="t1")])) == []
    # Then its event left while the task still read working: a worker killed after the outcome's
    # write has nothing left to lose
    assert store.tasks["t1"].status == "completed"
    assert events.flushed == [("call-1", WORKING)]
