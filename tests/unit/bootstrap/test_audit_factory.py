"""A4 wiring: the audit processor refuses to start without the tables and stream it needs."""

from __future__ import annotations

import pytest

from mcp_platform.adapters.dynamodb.audit_writer import AuditWriter
from mcp_platform.bootstrap.audit import build_audit_processor, build_audit_trail
from mcp_platform.config import ConfigError, Settings


def test_a4_missing_audit_table_or_event_stream_is_a_start_up_error() -> None:
    # Given settings without an audit table, and settings without an event stream
    no_audit = Settings.from_mapping({"SESSION_TABLE_NAME": "sessions", "EVENT_STREAM_NAME": "events"})
    no_stream = Settings.from_mapping({"SESSION_TABLE_NAME": "sessions", "AUDIT_TABLE_NAME": "audit"})
    # When the audit objects are built (clients injected: nothing may reach AWS)
    # Then each names the missing variable
    with pytest.raises(ConfigError, match="AUDIT_TABLE_NAME"):
        build_audit_processor(no_audit, dynamodb=object())
    with pytest.raises(ConfigError, match="AUDIT_TABLE_NAME"):
        build_audit_trail(no_audit, dynamodb=object())
    with pytest.raises(ConfigError, match="EVENT_STREAM_NAME"):
        build_audit_processor(no_stream, dynamodb=object())


def test_the_audit_writes_the_layout_of_the_release_to_stay_compatible_with() -> None:
    """Given COMPATIBLE_WITH=0.1 and none, When the audit function is built, Then its writer writes
    release 0.1's item layout in the first case only (the items that release's trail reads)."""
    base = {"SESSION_TABLE_NAME": "sessions", "AUDIT_TABLE_NAME": "audit", "EVENT_STREAM_NAME": "events"}
    layouts = {}
    for value in ("", "0.1"):
        settings = Settings.from_mapping({**base, **({"COMPATIBLE_WITH": value} if value else {})})
        writer = build_audit_processor(settings, dynamodb=object(), kinesis=object(), sqs=object())._writer
        assert isinstance(writer, AuditWriter)
        layouts[value] = writer.previous_layout
    assert layouts == {"": False, "0.1": True}
