"""iso_utc is the platform's one spelling of an instant: fixed-width microseconds and ``Z`` by
default (the record sort keys and the events both use it), milliseconds for the audit trail."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_platform.protocol.clock import iso_utc


def _datetime_text(epoch_seconds: float) -> str:
    return datetime.fromtimestamp(epoch_seconds, UTC).isoformat(timespec="microseconds")[:-6] + "Z"


@settings(max_examples=2000)
@given(st.floats(min_value=0, max_value=253_402_300_799.0))  # 1970 to the end of year 9999
def test_iso_utc_is_datetimes_text_for_any_instant(epoch_seconds: float) -> None:
    assert iso_utc(epoch_seconds) == _datetime_text(epoch_seconds)


def test_an_instant_rounding_up_lands_in_the_next_second() -> None:
    # Given two instants in neighbouring seconds, and one rounding up into the next second
    for instant in (1_800_000_000.999999, 1_800_000_001.000001, 1_800_000_000.9999996, 1_799_999_999.5):
        assert iso_utc(instant) == _datetime_text(instant)
    assert iso_utc(1_800_000_000.9999996) == "2027-01-15T08:00:01.000000Z"


def test_milliseconds_truncate_to_a_fixed_width() -> None:
    # The audit trail's sort key: always three digits, never rounded into the next millisecond
    assert iso_utc(1_800_000_000.9999, "milliseconds") == "2027-01-15T08:00:00.999Z"
    assert iso_utc(1_800_000_000.0, "milliseconds") == "2027-01-15T08:00:00.000Z"
    assert iso_utc(1_800_000_000.0, "auto") == "2027-01-15T08:00:00Z"
