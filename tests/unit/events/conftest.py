"""Shared builders for the event-pipeline unit tests (no AWS, fake clients only)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from mcp_platform.application.events.schema import ToolCallEvent

_ids = itertools.count()


def build_event(**overrides: Any) -> ToolCallEvent:
    n = next(_ids)
    fields: dict[str, Any] = {
        "event_id": f"call-{n:06d}",
        "principal": "principal-a",
        "tool": "echo",
        "status": "ok",
        "started_at": "2026-11-29T10:00:00.000000Z",
        "finished_at": "2026-11-29T10:00:00.120000Z",
        "request_bytes": 120,
        "response_bytes": 480,
        "duration_ms": 120.5,
        "session_id": f"sess-{n:06d}",
        "emitted_at": "2026-11-29T10:00:00.130000Z",
    }
    fields.update(overrides)
    return ToolCallEvent(**fields)


@pytest.fixture
def make_event() -> Callable[..., ToolCallEvent]:
    return build_event
