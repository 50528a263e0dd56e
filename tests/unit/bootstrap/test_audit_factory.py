"""A4 wiring: the audit processor refuses to start without the tables and stream it needs."""

from __future__ import annotations

import pytest

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
