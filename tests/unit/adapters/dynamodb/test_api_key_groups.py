"""API keys minted with groups: the key's record keeps them, the directory hands them back."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.application.auth.ports import KeyHolder


def test_a_key_minted_with_groups_names_them_and_one_without_names_none(ddb: Any, table: str) -> None:
    # Given two keys, one minted with two groups (one repeated), one without
    store = ApiKeyStore(table, ddb)
    grouped = store.mint("alice", groups=["support", "admins", "support"])
    plain = store.mint("bob")
    # Then the directory names each key's holder with exactly its groups
    assert store.holder_of(grouped) == KeyHolder("alice", groups=frozenset({"admins", "support"}))
    assert store.holder_of(plain) == KeyHolder("bob")
    assert store.holder_of("mcpk_unknown") is None


def test_an_empty_group_name_is_refused_before_anything_is_written(ddb: Any, table: str) -> None:
    with pytest.raises(ValueError, match="group name cannot be empty"):
        ApiKeyStore(table, ddb).mint("alice", groups=[" "])
    assert ddb.scan(TableName=table)["Count"] == 0
