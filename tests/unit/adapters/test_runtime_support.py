"""Default client construction: lazy clients build once, on first use only."""

from __future__ import annotations

import pytest

from mcp_platform.adapters import aws_clients
from mcp_platform.config import Settings


def test_lazy_client_builds_on_first_attribute_access_only(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []

    class Fake:
        def put_records(self) -> str:
            return "sent"

    def fake_client(service: str, settings: Settings, **config: object) -> Fake:
        built.append(service)
        return Fake()

    monkeypatch.setattr(aws_clients, "aws_client", fake_client)
    lazy = aws_clients.LazyClient("kinesis", Settings.from_mapping({"SESSION_TABLE_NAME": "t"}))
    assert built == []
    assert lazy.put_records() == "sent" and lazy.put_records() == "sent"
    assert built == ["kinesis"]


def test_json_log_lines_carry_level_message_and_exception() -> None:
    import json
    import logging

    from mcp_platform.application.metrics import JsonLogFormatter

    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed %s", ("call",), sys.exc_info())
    line = json.loads(JsonLogFormatter("svc").format(record))
    assert line["level"] == "ERROR" and line["message"] == "failed call" and line["service"] == "svc"
    assert "ValueError: boom" in line["exception"]


def test_json_log_lines_carry_the_calls_extra_fields_and_the_current_trace() -> None:
    import json
    import logging

    from mcp_platform.application.metrics import JsonLogFormatter
    from mcp_platform.protocol import trace_context

    # Given a record logged with extra fields while a span is current
    record = logging.LogRecord("ingest", logging.INFO, __file__, 1, "ingested", (), None)
    record.__dict__.update({"event_id": "e-1", "counted": True})
    scope = trace_context.scope()
    trace = trace_context.start()
    trace_context.activate(trace)
    try:
        line = json.loads(JsonLogFormatter("mcp-ingest").format(record))
    finally:
        trace_context.end_scope(scope)
    # Then the line has the common fields, the span's ids and the extra fields, and nothing of LogRecord's own
    assert line["service"] == "mcp-ingest" and line["message"] == "ingested" and line["level"] == "INFO"
    assert (line["trace_id"], line["span_id"]) == (trace.trace_id, trace.span_id)
    assert (line["event_id"], line["counted"]) == ("e-1", True)
    assert not {"args", "msg", "pathname", "lineno", "created"} & line.keys()
