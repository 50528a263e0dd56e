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
