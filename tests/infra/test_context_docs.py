"""The configuration reference covers exactly the context keys synth reads."""

from __future__ import annotations

from stacks.config import DEFAULTS
from stacks.context_docs import KEYS, markdown_table


def test_every_context_key_is_documented_and_nothing_else() -> None:
    # Given the keys PlatformConfig reads (DEFAULTS) / Then each has a meaning, and no stale entry remains
    assert set(KEYS) == set(DEFAULTS)
    assert all(doc.meaning.strip() for doc in KEYS.values())


def test_the_reference_table_has_one_row_per_key_with_its_default() -> None:
    table = markdown_table().splitlines()
    assert len(table) == 2 + len(DEFAULTS)
    assert "| `session_ttl_seconds` | `3600` |" in markdown_table()
