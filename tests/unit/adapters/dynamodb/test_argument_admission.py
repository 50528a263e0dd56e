"""Admission: what a tools/call may have stored, checked before any write."""

from __future__ import annotations

import asyncio
import copy
import json
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_platform.adapters.dynamodb.codec import attr_size, from_attr, to_attr
from mcp_platform.adapters.dynamodb.stream_images import to_plain
from mcp_platform.application.stored_form import check_storable
from mcp_platform.application.tool_calls import LoadedCall, ToolCallRunner
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.jsonrpc import INVALID_PARAMS, JsonRpcError, Request
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.protocol.storability import Inadmissible
from mcp_platform.protocol.versions import IDEMPOTENCY_KEY_META
from tests.support import platform_tools
from tests.support.services import make_services

CATALOG = Catalog.discover(platform_tools).tools


def modern_call() -> RequestContext:
    """One context per request: a RequestContext is mutable (the runner sets its notify)."""
    return RequestContext(principal="p", protocol_version="2026-07-28", modern=True)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**140), max_value=10**140)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(json_values)
def test_admitted_values_round_trip_through_the_store_codec_and_the_audit_deserialiser(value: Any) -> None:
    """Property: a value is either refused by admission, or it comes back as the client sent
    it: from the store codec unchanged (an int stays an int, a float the same float, -0.0
    included), and from the audit function's deserialiser number for number equal (it reads
    every number as a Decimal). Nothing raises (no decimal trap, no encoding error), nothing is
    altered or dropped. Maps compare without order: DynamoDB keeps none."""
    sent = copy.deepcopy(value)  # what the client sent, whatever admission does to ``value``
    try:
        check_storable(value)
    except Inadmissible:
        return
    stored = _as_stored(to_attr(value))
    _assert_same(from_attr(stored), sent)
    _assert_same(to_plain(stored), _as_audit_reads(sent))


def _as_stored(attr: dict[str, Any]) -> dict[str, Any]:
    """The attribute value as it is kept: UTF-8 JSON (a lone surrogate cannot be encoded)."""
    return json.loads(json.dumps(attr, ensure_ascii=False).encode("utf-8"))


def _as_audit_reads(value: Any) -> Any:
    """What the audit's deserialiser is expected to read for ``value``: numbers as Decimals
    (from the number's exact text: an int's digits, a float's shortest repr), everything else as sent."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return Decimal(str(value))
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {key: _as_audit_reads(item) for key, item in value.items()}
    return [_as_audit_reads(item) for item in value]


def _assert_same(got: Any, expected: Any, path: str = "value") -> None:
    """Equal and of the same type all the way down: ``==`` alone takes True for 1 and 1 for 1.0."""
    assert type(got) is type(expected), f"{path}: {got!r} is not {expected!r}"
    if isinstance(expected, dict):
        assert got.keys() == expected.keys(), f"{path}: keys {sorted(got)} are not {sorted(expected)}"
        for key, item in expected.items():
            _assert_same(got[key], item, f"{path}.{key}")
    elif isinstance(expected, list):
        assert len(got) == len(expected), f"{path}: {len(got)} items, not {len(expected)}"
        for index, item in enumerate(expected):
            _assert_same(got[index], item, f"{path}[{index}]")
    elif isinstance(expected, float):
        assert got == expected and math.copysign(1, got) == math.copysign(1, expected), (
            f"{path}: {got!r} != {expected!r}"
        )
    else:
        assert got == expected, f"{path}: {got!r} != {expected!r}"


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(json_values)
def test_admission_measures_a_value_as_the_store_sizes_it(value: Any) -> None:
    """Property: the size admission returns is the store's size of the stored attribute, so
    the call-record budget is checked before the tool runs with the figure the store uses."""
    try:
        size = check_storable(value)
    except Inadmissible:
        return
    assert size == attr_size(to_attr(value))


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"limit": 10**38}, "arguments.limit"),  # 39 digits: DynamoDB takes it, the audit deserialiser does not
        ({"limit": -(10**40)}, "arguments.limit"),
        ({"limit": 10**400}, "arguments.limit"),
    ],
)
def test_unstorable_numbers_are_an_invalid_arguments_result_naming_the_argument(
    arguments: dict[str, Any], named: str
) -> None:
    call = modern_call()
    prepared = ToolCallRunner.prepare(
        Request("tools/call", {"name": "read_notes", "arguments": {"session": "h", **arguments}}, 1), call, CATALOG
    )
    assert prepared.invalid_arguments is not None and prepared.invalid_arguments.startswith(named)
    result = asyncio.run(ToolCallRunner(make_services()).run(LoadedCall(prepared), call))
    assert result["isError"] and named in result["content"][0]["text"]


def test_a_lone_surrogate_in_text_is_refused_with_its_path() -> None:
    with pytest.raises(Inadmissible, match=r"notes\[1\]\.text"):
        check_storable({"notes": ["ok", {"text": "bad \ud800"}]})


def test_an_empty_key_is_refused_with_its_path() -> None:
    """Issue 26 (found by the stored-fields battery): the emulator stores ``{"": ...}`` in a map
    and then answers every read of the item with one botocore cannot parse, so the task holding
    it could never be read again (its message redelivered to the DLQ)."""
    with pytest.raises(Inadmissible, match=r"answer\.content \(a key\): an empty key"):
        check_storable({"content": {"": 1}}, "answer")


def test_an_idempotency_key_with_a_lone_surrogate_is_invalid_params() -> None:
    params = {
        "name": "append_note",
        "arguments": {"session": "h", "text": "x"},
        "_meta": {IDEMPOTENCY_KEY_META: "k\ud800"},
    }
    with pytest.raises(JsonRpcError) as refused:
        ToolCallRunner.prepare(Request("tools/call", params, 1), modern_call(), CATALOG)
    assert refused.value.code == INVALID_PARAMS and "well-formed" in refused.value.message
