"""The worked example of a tool with its own AWS resource (functions/endpoint/mcp_tools/bookmarks.py),
tested with the harness: its typed dependency built by the app's own ``build_deps`` from an
environment naming a table, the table in moto."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from mcp_platform import AppEnvironment
from mcp_platform.config import Settings
from mcp_platform.testing import ToolHarness
from mcp_tools import Deps, build_deps
from mcp_tools.bookmarks import list_bookmarks, save_bookmark

TABLE = "bookmarks-test"


@pytest.fixture
def deps(aws_env: None) -> Iterator[Deps]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "owner", "KeyType": "HASH"}, {"AttributeName": "url", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "owner", "AttributeType": "S"},
                {"AttributeName": "url", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        environ = {"BOOKMARKS_TABLE": TABLE, "SESSION_TABLE_NAME": "unused", "AWS_REGION": "us-east-1"}
        yield build_deps(AppEnvironment(environ=environ, settings=Settings.from_mapping(environ)))


def test_a_saved_bookmark_is_listed_for_its_owner_only(deps: Deps) -> None:
    # Given two callers with the app's dependencies
    alice, bob = ToolHarness(principal="alice", deps=deps), ToolHarness(principal="bob", deps=deps)
    # When alice saves two links and bob one
    saved = asyncio.run(alice.call(save_bookmark, url="https://b.example", title="B"))
    asyncio.run(alice.call(save_bookmark, url="https://a.example"))
    asyncio.run(bob.call(save_bookmark, url="https://c.example"))
    # Then each lists their own, in URL order, as structured content (a dataclass result)
    assert saved["structuredContent"]["url"] == "https://b.example" and saved["structuredContent"]["title"] == "B"
    listed = asyncio.run(alice.call(list_bookmarks))["structuredContent"]
    assert [b["url"] for b in listed["bookmarks"]] == ["https://a.example", "https://b.example"]
    assert listed["next_cursor"] is None
    assert [b["url"] for b in asyncio.run(bob.call(list_bookmarks))["structuredContent"]["bookmarks"]] == [
        "https://c.example"
    ]


def test_pages_follow_the_cursor(deps: Deps) -> None:
    harness = ToolHarness(principal="alice", deps=deps)
    for letter in "abc":
        asyncio.run(harness.call(save_bookmark, url=f"https://{letter}.example"))
    first = asyncio.run(harness.call(list_bookmarks, limit=2))["structuredContent"]
    rest = asyncio.run(harness.call(list_bookmarks, limit=2, cursor=first["next_cursor"]))["structuredContent"]
    assert [b["url"] for b in first["bookmarks"] + rest["bookmarks"]] == [f"https://{c}.example" for c in "abc"]


def test_bad_links_and_a_missing_table_are_tool_errors(deps: Deps) -> None:
    harness = ToolHarness(deps=deps)
    refused = asyncio.run(harness.call(save_bookmark, url="file:///etc/passwd"))
    assert refused["isError"] and "http(s) link" in refused["content"][0]["text"]
    unconfigured = asyncio.run(ToolHarness(deps=Deps(bookmarks=None)).call(list_bookmarks))
    assert unconfigured["isError"] and "BOOKMARKS_TABLE" in unconfigured["content"][0]["text"]
