"""X6 over two instances sharing one DAX item cache (the stand-in, as one cluster serves every
instance): the 2025 session check and opted-in read-only tools are served from the cache, a write
through any instance is seen by every other, and a write that bypasses the cache never decides a
commit. Each coherence test has a control: the same scenario against a cache that does not
write through (a naive one), which the same assertions catch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from local.dax_standin import ItemCacheStandIn
from mcp_platform.adapters.dynamodb import table_schema as ts
from tests.support.endpoint import AwsStack, Instance, alice_and_bob, endpoint_instance, fresh_stack
from tests.support.mcp_http import call, final_message, headers, initialize

pytestmark = pytest.mark.integration

aws = pytest.fixture(fresh_stack, name="aws")
keys = pytest.fixture(alice_and_bob, name="keys")


class NaiveCache(ItemCacheStandIn):
    """A control: caches reads but lets writes go around it (no write-through)."""

    def _write(self, operation: str, request: dict[str, Any], touched: Any) -> dict[str, Any]:
        return dict(getattr(self._client, operation)(**request))


def pair(aws: AwsStack, cache: ItemCacheStandIn) -> Iterator[tuple[Instance, Instance]]:
    with (
        endpoint_instance(aws, dax=cache, dynamodb=aws.client("dynamodb")) as a,
        endpoint_instance(aws, dax=cache, dynamodb=aws.client("dynamodb")) as b,
    ):
        yield a, b


def test_x6_the_2025_session_check_is_served_from_the_item_cache(aws: AwsStack, keys: dict[str, str]) -> None:
    # Given two instances sharing one cache, and a 2025 session opened on the first
    cache = ItemCacheStandIn(aws.client("dynamodb"))
    for a, b in pair(aws, cache):
        session = initialize(a.url, keys["alice"])
        # When ten list requests of that session alternate between the instances
        for n in range(10):
            url = (a if n % 2 else b).url
            assert "result" in final_message(call(url, keys["alice"], session, n, "tools/list"))
        # Then every session check after the first was a cache hit (the first read the table)
        assert cache.stats.by_operation.get("GetItem", 0) >= 9


def test_x6_an_opted_in_read_only_tool_reads_its_session_from_the_cache(aws: AwsStack, keys: dict[str, str]) -> None:
    # Given a session with a note, appended through one instance
    cache = ItemCacheStandIn(aws.client("dynamodb"))
    for a, b in pair(aws, cache):
        session = initialize(a.url, keys["alice"])
        note = {"name": "append_note", "arguments": {"text": "first"}}
        assert "result" in final_message(call(a.url, keys["alice"], session, 1, "tools/call", note))
        # When read_notes (consistency="eventual") runs twice on the other instance
        before = cache.stats.by_operation.get("BatchGetItem", 0)
        for n in (2, 3):
            read = final_message(call(b.url, keys["alice"], session, n, "tools/call", {"name": "read_notes"}))
            # Then it sees the note written through the other instance (write-through)
            assert [entry["text"] for entry in read["result"]["structuredContent"]["notes"]] == ["first"], read
        # And its session read came from the cache at least the second time
        assert cache.stats.by_operation.get("BatchGetItem", 0) > before


@pytest.mark.parametrize("cache_kind", ["write-through", "naive control"])
def test_x6_a_session_ended_through_one_instance_is_gone_on_the_other(
    aws: AwsStack, keys: dict[str, str], cache_kind: str
) -> None:
    # Given a 2025 session whose check the other instance has cached
    table = aws.client("dynamodb")
    cache = ItemCacheStandIn(table) if cache_kind == "write-through" else NaiveCache(table)
    for a, b in pair(aws, cache):
        session = initialize(a.url, keys["alice"])
        assert "result" in final_message(call(b.url, keys["alice"], session, 1, "tools/list"))
        # When the client ends it through the first instance
        deleted = httpx.delete(
            a.url, headers=headers(keys["alice"], **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
        )
        assert deleted.status_code == 200
        # Then the other instance answers 404 for it: the end went through the cache
        status = call(b.url, keys["alice"], session, 2, "tools/list").status_code
        if cache_kind == "write-through":
            assert status == 404
        else:  # the control: a cache the end went around still says "alive"
            assert status == 200


def test_x6_a_write_that_bypasses_the_cache_never_decides_a_commit(aws: AwsStack, keys: dict[str, str]) -> None:
    # Given a 2025 session whose check is cached
    cache = ItemCacheStandIn(aws.client("dynamodb"))
    for a, b in pair(aws, cache):
        session = initialize(a.url, keys["alice"])
        assert "result" in final_message(call(b.url, keys["alice"], session, 1, "tools/list"))
        # When its item is deleted by a writer that does not go through DAX (another function, the console)
        aws.client("dynamodb").delete_item(
            TableName=aws.table, Key={ts.PK: {"S": ts.session_pk(session)}, ts.SK: {"S": ts.METADATA_SK}}
        )
        # Then a cached check may still pass (the documented bound: one item-cache TTL), but a
        # committing tool reads consistently and is refused: nothing is written for a gone session
        note = {"name": "append_note", "arguments": {"text": "late"}}
        response = call(b.url, keys["alice"], session, 2, "tools/call", note)
        assert response.status_code == 404, response.text
        items = aws.client("dynamodb").scan(TableName=aws.table)["Items"]
        assert not [i for i in items if i[ts.PK]["S"] == ts.session_pk(session)]
