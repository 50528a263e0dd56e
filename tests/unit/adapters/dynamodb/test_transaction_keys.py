"""D10: one transaction may touch each item once; two actions on one item are refused before
anything is sent (DynamoDB would reject the whole transaction with a ValidationException)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform.adapters.dynamodb.sessions.actions import reject_repeated_keys


def put(table: str, pk: str, sk: str) -> dict[str, Any]:
    return {"Put": {"TableName": table, "Item": {"pk": {"S": pk}, "sk": {"S": sk}, "n": {"N": "1"}}}}


def update(table: str, pk: str, sk: str) -> dict[str, Any]:
    return {"Update": {"TableName": table, "Key": {"pk": {"S": pk}, "sk": {"S": sk}}}}


def test_two_actions_on_one_item_are_refused() -> None:
    with pytest.raises(ValueError, match="two transaction actions on one item"):
        reject_repeated_keys([put("t", "session#a", "metadata"), update("t", "session#a", "metadata")])


def test_distinct_items_and_other_tables_pass() -> None:
    reject_repeated_keys(
        [
            put("t", "session#a", "metadata"),
            put("t", "session#a", "tool#1"),
            put("other", "session#a", "metadata"),  # the same key in another table is another item
            {"Put": {"TableName": "x", "Item": {"id": {"S": "1"}}}},  # another key schema: not judged here
        ]
    )
