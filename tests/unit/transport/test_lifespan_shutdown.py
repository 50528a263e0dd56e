"""The endpoint's ASGI lifespan: shutdown (what SIGTERM triggers under uvicorn --lifespan on)
flushes buffered events first, within a bound that fits Lambda's ~300 ms before SIGKILL."""

from __future__ import annotations

import asyncio
import logging
import time
from types import SimpleNamespace
from typing import Any

import pytest

from mcp_platform.transport.endpoint import McpEndpoint


def endpoint_with_flush(flush: Any) -> McpEndpoint:
    """Lifespan touches only the streamer's flush: the rest stays unset."""
    server: Any = SimpleNamespace(services=SimpleNamespace(store=None))
    unused: Any = None
    streamer: Any = SimpleNamespace(flush_events=flush)
    return McpEndpoint(server, unused, unused, streamer)


async def run_lifespan(app: McpEndpoint, log: list[str]) -> None:
    incoming = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def receive() -> dict[str, Any]:
        return next(incoming)

    async def send(message: dict[str, Any]) -> None:
        log.append(message["type"])

    await app({"type": "lifespan"}, receive, send)


def test_shutdown_completes_after_the_flush() -> None:
    """Given buffered events, when the lifespan shuts down, then the flush has run before
    lifespan.shutdown.complete is sent."""
    log: list[str] = []

    async def flush() -> None:
        await asyncio.sleep(0.01)
        log.append("flushed")

    asyncio.run(run_lifespan(endpoint_with_flush(flush), log))
    assert log == ["lifespan.startup.complete", "flushed", "lifespan.shutdown.complete"]


def test_a_hanging_flush_does_not_hold_shutdown(caplog: pytest.LogCaptureFixture) -> None:
    """Given a flush that hangs (Kinesis unreachable), when the lifespan shuts down, then
    shutdown completes within the bound and the unfinished flush is logged as an error."""
    log: list[str] = []

    async def flush() -> None:
        await asyncio.sleep(30)

    started = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="mcp_platform.transport.endpoint"):
        asyncio.run(run_lifespan(endpoint_with_flush(flush), log))
    assert time.monotonic() - started < 10  # not the 30 s the flush would hang (no timing claim)
    assert log == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert "flush still running" in caplog.text
