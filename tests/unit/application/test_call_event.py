"""The tool-call event the endpoint writes (call_event, record data straight from the call) is
always one ingest accepts: the endpoint does not re-validate it per call, so what it writes must
be valid by construction, and carry every field a ToolCallEvent written the long way carries."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

from mcp_platform.application.events.schema import STATUS_ERROR, ToolCallEvent
from mcp_platform.application.invocation import call_event
from mcp_platform.protocol import trace_context
from mcp_platform.protocol.preparation import PreparedCall

CALL = SimpleNamespace(principal="alice", trace=None)


def _prepared() -> PreparedCall:
    spec = SimpleNamespace(name="echo")
    return PreparedCall(spec, {"text": "hi"}, None, "call-1", None, request_bytes=12)  # type: ignore[arg-type]


def test_the_event_round_trips_through_ingests_validation() -> None:
    # Given a call that ran 25 ms and returned an error result
    result = {"content": [{"type": "text", "text": "nope é"}], "isError": True}
    # When its event is written and read back as ingest reads it
    data = call_event(_prepared(), CALL, result, 1_800_000_000.0, 1_800_000_000.025).to_bytes()  # type: ignore[arg-type]
    event = ToolCallEvent.from_bytes(data)
    # Then ingest accepts it, the same bytes a ToolCallEvent of those values writes, emitted as the
    # call finished, sized as the result's UTF-8 JSON
    assert json.loads(event.to_bytes()) == json.loads(data)
    assert (event.event_id, event.principal, event.tool, event.request_bytes) == ("call-1", "alice", "echo", 12)
    assert event.session_id is None
    assert event.status == STATUS_ERROR
    assert event.duration_ms == 25.0
    assert event.emitted_at == event.finished_at == "2027-01-15T08:00:00.025000Z"
    assert event.response_bytes == len(json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode())


def test_a_wall_clock_stepped_back_during_the_call_still_gives_a_valid_event() -> None:
    # Given a call whose wall clock stepped back 2 s while it ran (an NTP correction)
    data = call_event(_prepared(), CALL, {"content": []}, 1_800_000_002.0, 1_800_000_000.0).to_bytes()  # type: ignore[arg-type]
    # When ingest reads it / Then it is valid: no time before its start, zero duration
    parsed = ToolCallEvent.from_bytes(data)
    assert parsed.finished_at == parsed.started_at
    assert parsed.duration_ms == 0


def test_a_session_calls_event_names_its_session() -> None:
    # Given a call in session "s-1" / When its event is written and read back
    prepared = dataclasses.replace(_prepared(), session_id="s-1")
    event = ToolCallEvent.from_bytes(
        call_event(prepared, CALL, {"content": []}, 1_800_000_000.0, 1_800_000_000.0).to_bytes()
    )  # type: ignore[arg-type]
    # Then it carries the session, as ingest needs to record it under the session
    assert event.session_id == "s-1"


def test_a_traced_calls_event_carries_its_trace_and_span() -> None:
    # Given a call made by a request continuing the caller's trace
    trace = trace_context.request_trace({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
    call = SimpleNamespace(principal="alice", trace=trace)
    # When its event is written and read back as ingest reads it
    event = ToolCallEvent.from_bytes(
        call_event(_prepared(), call, {"content": []}, 1_800_000_000.0, 1_800_000_000.0).to_bytes()
    )  # type: ignore[arg-type]
    # Then it names the caller's trace and the request's own span (not the caller's)
    assert event.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert event.span_id == trace.span_id != "00f067aa0ba902b7"
