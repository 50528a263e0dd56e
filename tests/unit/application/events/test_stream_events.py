"""The tool-event stream's typed dispatch: tool calls (no ``type``) and session.expired (A4)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from mcp_platform.application.events.schema import EventSchemaError, ToolCallEvent
from mcp_platform.application.events.stream_events import (
    SESSION_EXPIRED_VERSION,
    SessionExpiredEvent,
    decode_stream_event,
)

EXPIRED = SessionExpiredEvent(
    session_id="s1",
    sequence_number="4960000000000000000001",
    removed_at="2026-11-29T12:00:05Z",
    owner="alice",
    kind="application",
    tool_calls=2,
    created_at="2026-11-29T10:00:00Z",
    expired_at="2026-11-29T12:00:00Z",
    duration_seconds=7200,
    last_activity="2026-11-29T10:20:00Z",
    final_version=3,
)


def test_a4_session_expired_round_trips_with_its_type_version_and_id() -> None:
    # Given an expiry event / When serialized and decoded by the dispatch
    body = EXPIRED.to_dict()
    decoded = decode_stream_event(json.dumps(body).encode())
    # Then the same event, and the wire names its type, version and deterministic id
    assert decoded == EXPIRED
    assert (body["type"], body["v"], body["event_id"]) == (
        "session.expired",
        SESSION_EXPIRED_VERSION,
        "session.expired#s1",
    )


def test_a4_summary_with_nulls_and_extra_keys_becomes_an_event() -> None:
    # Given a stored summary (unknown owner, the writer's event_published flag)
    summary = {"session_id": "s2", "sequence_number": "12", "removed_at": "2026-11-29T12:00:05Z"}
    summary |= {"owner": None, "tool_calls": 0, "event_published": False}
    # Then the event omits what is unknown and ignores what is not part of it
    assert SessionExpiredEvent.from_summary(summary).to_dict() == {
        "type": "session.expired",
        "v": 1,
        "event_id": "session.expired#s2",
        "session_id": "s2",
        "sequence_number": "12",
        "removed_at": "2026-11-29T12:00:05Z",
        "tool_calls": 0,
    }


def test_tool_call_without_type_still_decodes_as_a_tool_call(make_event: Callable[..., ToolCallEvent]) -> None:
    # Given a tool-call event in the wire format it has always had (no "type") / Then a tool call
    event = make_event()
    assert "type" not in event.to_dict()
    assert decode_stream_event(event.to_bytes()) == event


@pytest.mark.parametrize(
    "change",
    [
        {"event_id": "session.expired#other"},  # the id must name the session it carries
        {"removed_at": "yesterday"},
        {"sequence_number": "not-a-sequence"},
        {"tool_calls": -1},
        {"v": True},
    ],
)
def test_a5_invalid_session_expired_raises_the_typed_error(change: dict[str, object]) -> None:
    body = EXPIRED.to_dict() | change
    with pytest.raises(EventSchemaError):
        decode_stream_event(json.dumps(body).encode())


def test_a5_another_type_is_never_read_as_a_tool_call(make_event: Callable[..., ToolCallEvent]) -> None:
    # Given tool-call fields under another type / Then the tool-call reader refuses them
    body = make_event().to_dict() | {"type": "session.expired"}
    with pytest.raises(EventSchemaError, match="not a tool-call event"):
        ToolCallEvent.from_dict(body)
