"""HttpRequest's headers, whatever the bytes, are the per-header decode (names lower-cased), the
last repeated name winning, and a repeated name must be seen by the single-valued checks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_platform.transport.messages import HttpRequest

HEADER_BYTES = st.binary(max_size=12) | st.sampled_from([b"Host", b"host", b"ACCEPT", b"", b"\xc9t\xe9"])


def _one_by_one(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in raw}


def _request(raw: list[tuple[bytes, bytes]]) -> HttpRequest:
    return HttpRequest({"method": "POST", "path": "/mcp", "headers": raw})


@settings(max_examples=3000)
@given(st.lists(st.tuples(HEADER_BYTES, HEADER_BYTES), max_size=8))
def test_headers_are_the_per_header_decode_for_any_bytes(raw: list[tuple[bytes, bytes]]) -> None:
    request = _request(raw)
    assert request.headers == _one_by_one(raw)
    assert request.has_repeats == (len(_one_by_one(raw)) != len(raw))


def test_a_repeated_name_in_another_case_is_counted_twice() -> None:
    # Given Authorization sent twice, in two spellings
    request = _request([(b"Authorization", b"Bearer a"), (b"authorization", b"Bearer b"), (b"host", b"h")])
    # Then the last one is the value, and the name counts twice (refused as repeated)
    assert request.headers["authorization"] == "Bearer b"
    assert request.count("authorization") == 2 and request.count("host") == 1
