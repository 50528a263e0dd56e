"""The worked example on the local platform (#28): the app's CDK hook, its build_deps and its
tools, served by `python -m local` from the starter app's own features folder."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from local.platform import DEV_PRINCIPAL
from local.resources import local_name
from tests.support.local_platform import LocalPlatform, local_platform

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_platform")]
ROOT = Path(__file__).resolve().parents[2]
STAGE = "dev"  # cdk.json's default stage, which `python -m local` synthesizes


@pytest.fixture(scope="module")
def app_platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPlatform]:
    features = ROOT / "functions" / "endpoint" / "mcp_tools"
    with local_platform(tmp_path_factory.mktemp("app"), env={"MCP_FEATURES_DIR": str(features)}) as running:
        yield running


def test_the_apps_own_table_is_provisioned_granted_and_reached_through_typed_deps(app_platform: LocalPlatform) -> None:
    """Given the app's CDK hook (functions/endpoint/app_resources.py) and its build_deps, when a
    caller saves a bookmark through the endpoint, then the item is in the app's own table (created
    from the synthesized template, named in the function's environment) under the caller's
    principal, and list_bookmarks reads it back."""
    url = f"https://example.org/{uuid.uuid4().hex[:8]}"

    async def drive() -> tuple[dict[str, Any], dict[str, Any]]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {app_platform.api_key}"}, timeout=30)
        async with Client(streamable_http_client(app_platform.mcp_url, http_client=http), mode="2026-07-28") as session:
            saved = await session.call_tool("save_bookmark", {"url": url, "title": "worked example"})
            listed = await session.call_tool("list_bookmarks", {"limit": 100})
            assert not saved.is_error and not listed.is_error, (saved, listed)
            return saved.structured_content, listed.structured_content

    saved, listed = anyio.run(drive)
    assert saved["url"] == url and saved["title"] == "worked example"
    assert url in [bookmark["url"] for bookmark in listed["bookmarks"]]
    items = app_platform.aws("dynamodb").scan(TableName=local_name(STAGE, "AppBookmarks"))["Items"]
    assert [item["owner"]["S"] for item in items if item["url"]["S"] == url] == [DEV_PRINCIPAL]
