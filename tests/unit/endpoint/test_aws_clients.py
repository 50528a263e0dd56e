"""Default client construction: lazy clients build once, on first use only."""

from __future__ import annotations

import pytest

from mcp_platform import aws_clients
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
