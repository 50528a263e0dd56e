"""Task tools that let a test see what the worker did: how often a tool ran, and whether a
running tool saw its task's cancellation.

``RUNS[tag]`` counts the runs of ``noted_task``; ``SAW_CANCEL`` lists the tags whose run of
``patient_task`` saw ``ctx.cancelled`` (set by the worker when a ``tasks/cancel`` arrived on any
instance); ``STARTED`` the tags whose run has begun.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter

from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.tools import tool

RUNS: Counter[str] = Counter()
STARTED: list[str] = []
SAW_CANCEL: list[str] = []


@tool(
    description="Test task: appends one note to its session (an append-only commit).",
    session="required",
    effect="append_only",
    task="required",
)
async def noted_task(ctx: ToolContext, tag: str) -> dict[str, int]:
    RUNS[tag] += 1
    ctx.append_to_session({"role": "note", "text": tag})
    return {"run": RUNS[tag]}


@tool(description="Test task: waits up to `seconds` for its cancellation.", task="required")
async def patient_task(ctx: ToolContext, tag: str, seconds: float) -> str:
    STARTED.append(tag)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(ctx.cancelled.wait(), seconds)
    if ctx.cancelled.is_set():
        SAW_CANCEL.append(tag)
        return "stopped"
    return "waited"
