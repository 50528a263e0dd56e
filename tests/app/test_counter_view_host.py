"""The starter app's counter view (functions/endpoint/mcp_tools/counter_view.py), as served, behind
the official MCP Apps host bridge (``AppBridge`` of @modelcontextprotocol/ext-apps) in headless
Chromium (local/clients/app_view_host.mjs): the bridge validates every message the page sends, so
a handshake the page skips or a request the extension does not define fails here, not in a host."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from mcp_platform.testing import ToolHarness
from mcp_tools.counter_view import counter_view
from tests.support.app_host import render_view

pytestmark = pytest.mark.integration


def counter(value: int) -> dict[str, Any]:
    """increment_counter's result, as the endpoint answers it."""
    counted = {"name": "hits", "value": value}
    return {"content": [{"type": "text", "text": json.dumps(counted)}], "structuredContent": counted, "isError": False}


def test_the_counter_view_shows_the_result_and_adds_one_through_the_host(tmp_path: Path) -> None:
    # Given the view as the endpoint serves it, rendered by the host bridge after a call on a session
    (page,) = asyncio.run(ToolHarness().read(counter_view))
    refused = {"content": [{"type": "text", "text": "a session holds at most 100 counters"}], "isError": True}
    # When it shows the result, and "+1" is clicked twice (the host answering 4, then an error)
    report = render_view(
        page["text"],
        tmp_path,
        input={"name": "hits", "session": "handle-1"},
        result=counter(3),
        answers=[counter(4), refused],
        steps=[
            {"wait": ["#name", "hits"]},
            {"wait": ["#value", "3"]},
            {"click": "#add"},
            {"wait": ["#value", "4"]},
            {"click": "#add"},
            {"wait": ["#status", "a session holds at most 100 counters"]},
        ],
    )
    # Then each click called the tool through the host on the call's session, adding one; the
    # page told the host its height and acknowledged the teardown
    call = {"name": "increment_counter", "arguments": {"name": "hits", "session": "handle-1", "by": 1}}
    assert report["calls"] == [call, call]
    assert report["sizes"] and all(size["height"] > 0 for size in report["sizes"])
    assert report["teardown"] is True
