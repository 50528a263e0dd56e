"""Fixtures shared across the unit-test layers: event builders for the event pipeline (no AWS,
fake clients only) and the moto session/audit tables of the audit tests."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcp_platform.application.events.schema import ToolCallEvent
from tests.support.session_stream import MotoSessionTable, aws_test_env, moto_tables

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


@pytest.fixture
def tables(monkeypatch: pytest.MonkeyPatch) -> Iterator[MotoSessionTable]:
    aws_test_env(monkeypatch)
    with moto_tables() as created:
        yield created
