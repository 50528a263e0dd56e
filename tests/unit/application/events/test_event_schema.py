"""Versioned tool-call event schema: round trip and typed validation errors."""

from __future__ import annotations

import json

import pytest

from mcp_platform.application.events.schema import SCHEMA_VERSION, EventSchemaError, ToolCallEvent

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"


def test_round_trip_keeps_every_field(make_event):
    # Given an event with the optional fields set
    event = make_event(tenant="acme", error_code="Timeout", status="error", first_byte_ms=3.5)
    # When it is serialized and parsed back
    parsed = ToolCallEvent.from_bytes(event.to_bytes())
    # Then nothing changed and the wire format names its version
    assert parsed == event
    assert json.loads(event.to_bytes())["v"] == SCHEMA_VERSION


def test_every_field_travels_on_the_wire(make_event):
    # to_dict names the required fields one by one: a field added to the dataclass must travel too
    from dataclasses import fields

    from mcp_platform.application.events.schema import _OPTIONAL, _REQUIRED

    assert {f.name for f in fields(ToolCallEvent)} == {*_REQUIRED, *_OPTIONAL, "schema_version"}
    full = make_event(tenant="t", error_code="e", first_byte_ms=1.0, trace_id=TRACE_ID, span_id=SPAN_ID, recorded=True)
    assert set(full.to_dict()) == {*_REQUIRED, *_OPTIONAL, "v"}


def test_started_date_is_the_utc_day(make_event):
    event = make_event(started_at="2026-11-29T23:30:00-02:00", finished_at="2026-11-30T01:31:00Z")
    assert event.started_date == "2026-11-30"


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"\xff\xfe", "not UTF-8"),
        (b"{not json", "not JSON"),
        (b"[1, 2]", "not an object"),
        (b'{"event_id": "x"}', "no version"),
    ],
)
def test_undecodable_bytes_raise_the_typed_error(raw, why):
    with pytest.raises(EventSchemaError):
        ToolCallEvent.from_bytes(raw)


@pytest.mark.parametrize(
    "change",
    [
        {"v": SCHEMA_VERSION + 1},
        {"v": True},
        {"status": "maybe"},
        {"request_bytes": -1},
        {"request_bytes": "12"},
        {"duration_ms": True},
        {"started_at": "yesterday"},
        {"started_at": "2026-11-29T10:00:00"},  # naive: no offset
        {"finished_at": "2026-11-29T09:00:00Z"},  # before started_at
        {"tool": ""},
        {"session_id": ""},
        {"trace_id": TRACE_ID.upper()},  # W3C ids are lower-case hex
        {"trace_id": "0" * 32},  # the invalid trace id
        {"trace_id": TRACE_ID[:-1]},
        {"trace_id": 12},
        {"span_id": "0" * 16},
        {"span_id": SPAN_ID + "0"},
    ],
)
def test_invalid_fields_raise_the_typed_error(make_event, change):
    # Given a valid event body with one field broken
    body = make_event().to_dict() | change
    # When / Then parsing refuses it with EventSchemaError (a poison record, by type)
    with pytest.raises(EventSchemaError):
        ToolCallEvent.from_bytes(json.dumps(body).encode())


def test_missing_required_field_is_named(make_event):
    body = make_event().to_dict()
    del body["principal"]
    with pytest.raises(EventSchemaError, match="principal"):
        ToolCallEvent.from_dict(body)


def test_the_trace_fields_travel_and_older_version_1_events_still_read(make_event):
    # Given an event of a traced request, and a version-1 event written before the trace fields
    traced = make_event(trace_id=TRACE_ID, span_id=SPAN_ID)
    older = make_event().to_dict()
    # When each is written and read back as ingest reads it
    parsed = ToolCallEvent.from_bytes(traced.to_bytes())
    untraced = ToolCallEvent.from_dict(older)
    # Then the trace travels under the same schema version (an optional field: compatible), and
    # the older event reads as one without a trace
    assert (parsed.trace_id, parsed.span_id, parsed.schema_version) == (TRACE_ID, SPAN_ID, 1)
    assert "trace_id" not in older and untraced.trace_id is None and untraced.span_id is None
