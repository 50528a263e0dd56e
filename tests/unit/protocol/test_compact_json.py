"""mcp_platform.protocol.compact_json: orjson's speed where its answer is the standard library's.

Reading must give exactly what ``json.loads`` gives (or the same error class) for any bytes;
writing must give a document ``json.loads`` reads back as the value."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_platform.protocol import compact_json

# Text with lone surrogates, integers far beyond 64 bits (DynamoDB keeps 38 digits), all floats.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec=None, exclude_categories=()))
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4), max_leaves=20
)


def _read(reader: Any, data: bytes) -> tuple[str, Any]:
    try:
        return "value", repr(reader(data))  # repr: 1 and 1.0, -0.0 and 0.0 are told apart
    except RecursionError:
        return "RecursionError", None
    except UnicodeDecodeError:
        return "UnicodeDecodeError", None
    except ValueError:
        return "ValueError", None


def _standard(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"))


@settings(max_examples=400)
@given(values, st.booleans())
def test_reading_any_document_gives_the_standard_librarys_value(value: Any, ascii_only: bool) -> None:
    # Given a document the standard library wrote (escaped or raw UTF-8; lone surrogates escaped)
    data = json.dumps(value, ensure_ascii=ascii_only or _has_surrogate(value)).encode()
    # When compact_json reads it / Then it is exactly what json.loads reads
    assert _read(compact_json.loads, data) == _read(_standard, data)


@settings(max_examples=400)
@given(st.binary(max_size=64) | st.sampled_from([b"NaN", b"1e400", b'"\\ud800"', b"[" * 2000 + b"]" * 2000]))
def test_reading_any_bytes_gives_the_standard_librarys_value_or_error(data: bytes) -> None:
    assert _read(compact_json.loads, data) == _read(_standard, data)


def test_a_long_integer_keeps_every_digit() -> None:
    # orjson alone would read this as a float (1.2345678901234568e+37)
    assert compact_json.loads(b'{"n": 12345678901234567890123456789012345678}') == {
        "n": 12345678901234567890123456789012345678
    }


@settings(max_examples=400)
@given(values)
def test_writing_gives_a_document_that_reads_back_as_the_value(value: Any) -> None:
    assert json.loads(compact_json.dumps(value)) == value


def test_what_orjson_refuses_is_written_by_the_standard_library() -> None:
    value = {"big": 2**70, 3: "int key", "lone": "\ud800"}
    assert json.loads(compact_json.dumps(value)) == {"big": 2**70, "3": "int key", "lone": "\ud800"}


def test_unknown_types_are_written_as_their_str_and_non_finite_floats_as_null() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    assert json.loads(compact_json.dumps({"o": Odd(), "nan": math.nan})) == {"o": "odd", "nan": None}


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    return False


# -- repeated keys (issue 26): the screen never hides one, and never invents one -----------------------
KEYS = st.sampled_from(["a", "b", "a:b", ":", "é", "\ud800"])
DocumentTree = Any  # ("object", [(key, tree)]) | ("array", [tree]) | a scalar


def _trees() -> st.SearchStrategy[DocumentTree]:
    leaves = st.one_of(st.integers(-5, 2**70), st.sampled_from(["x", "t: 1", "\ud800", 1.5, None, True]))
    return st.recursive(
        leaves,
        lambda inner: (
            st.tuples(st.just("object"), st.lists(st.tuples(KEYS, inner), max_size=4))
            | st.tuples(st.just("array"), st.lists(inner, max_size=3))
        ),
        max_leaves=10,
    )


def _render(tree: DocumentTree, escape_colons: bool) -> str:
    """JSON text for ``tree``, keeping every member (repeats too); colons in strings escaped
    (``\\u003a``) when asked, as another encoder might write them."""
    if isinstance(tree, tuple) and tree[0] == "object":
        members = (f"{_string(key, escape_colons)}:{_render(value, escape_colons)}" for key, value in tree[1])
        return "{" + ",".join(members) + "}"
    if isinstance(tree, tuple):
        return "[" + ",".join(_render(item, escape_colons) for item in tree[1]) + "]"
    return _string(tree, escape_colons) if isinstance(tree, str) else json.dumps(tree)


def _string(text: str, escape_colons: bool) -> str:
    written = json.dumps(text)
    return written.replace(":", "\\u003a") if escape_colons else written


def _repeats(tree: DocumentTree) -> set[str]:
    if isinstance(tree, tuple) and tree[0] == "object":
        keys = [key for key, _ in tree[1]]
        found = {key for key in keys if keys.count(key) > 1}
        return found.union(*(_repeats(value) for _, value in tree[1]))
    if isinstance(tree, tuple):
        return set().union(*(_repeats(item) for item in tree[1]))
    return set()


@settings(max_examples=500)
@given(_trees(), st.booleans())
def test_a_repeated_key_is_found_exactly_when_the_text_repeats_one(tree: DocumentTree, escape_colons: bool) -> None:
    # Given JSON text that may repeat keys within an object (some keys and strings hold colons,
    # possibly written as escapes), When compact_json reads it and looks for a repeated key
    data = _render(tree, escape_colons).encode()
    found = compact_json.repeated_key(data, compact_json.loads(data))
    # Then it names one exactly when the text repeats one
    expected = _repeats(tree)
    assert (found is None) == (not expected) and (found is None or found in expected), (data, found)


def test_a_repeat_hidden_behind_an_escaped_colon_is_still_found() -> None:
    """The count screen alone would pass this: one member dropped, one colon added by an escape."""
    data = b'{"a":1,"a":2,"b":"\\u003a"}'
    assert compact_json.repeated_key(data, compact_json.loads(data)) == "a"


def test_the_canonical_text_sorts_keys_escapes_non_ascii_and_has_no_whitespace() -> None:
    # Digests and idempotency tokens are computed from it: the text itself must never change
    assert compact_json.canonical({"b": [1, "é"], "a": None}) == '{"a":null,"b":[1,"\\u00e9"]}'


def test_the_canonical_text_is_equal_for_equal_values_in_any_key_order() -> None:
    assert compact_json.canonical({"x": 1, "y": {"q": 2, "p": 3}}) == compact_json.canonical(
        {"y": {"p": 3, "q": 2}, "x": 1}
    )


def test_the_canonical_text_refuses_what_json_has_no_type_for_unless_told_how_to_write_it() -> None:
    with pytest.raises(TypeError):
        compact_json.canonical({"when": object})
    assert compact_json.canonical({"n": {1, 2}}, default=sorted) == '{"n":[1,2]}'
