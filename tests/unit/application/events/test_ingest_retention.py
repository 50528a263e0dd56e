"""K7: the ingest dedupe window follows the stream's retention (configurable 24..8760 h)."""

from __future__ import annotations

import pytest

from mcp_platform.application.events.ingest import DEFAULT_DEDUPE_TTL_S, dedupe_ttl_seconds
from mcp_platform.config import ConfigError, EnvVars, Settings

BASE = {EnvVars.SESSION_TABLE: "sessions"}


def test_k7_event_retention_defaults_to_168_hours() -> None:
    # Given no retention setting / Then the K7 default, and markers live 8 days
    assert Settings.from_mapping(BASE).event_retention_hours == 168
    assert DEFAULT_DEDUPE_TTL_S == dedupe_ttl_seconds(168) == 8 * 24 * 3600


def test_k7_event_retention_reads_the_environment() -> None:
    # Given the stack's retention of a year / Then the setting and a marker outliving it by a day
    settings = Settings.from_mapping(BASE | {EnvVars.EVENT_RETENTION_HOURS: "8760"})
    assert settings.event_retention_hours == 8760
    assert dedupe_ttl_seconds(settings.event_retention_hours) == (8760 + 24) * 3600


@pytest.mark.parametrize("raw", ["23", "8761", "a week"])
def test_k7_event_retention_outside_kinesis_limits_is_refused(raw: str) -> None:
    # Given a value Kinesis would not accept / Then start-up fails naming the variable
    with pytest.raises(ConfigError, match=EnvVars.EVENT_RETENTION_HOURS):
        Settings.from_mapping(BASE | {EnvVars.EVENT_RETENTION_HOURS: raw})
