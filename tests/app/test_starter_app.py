"""The starter app's own tests: its features (functions/endpoint/mcp_tools) tested one by one
with the tool-test harness: no endpoint, no AWS, a fake session the test seeds and inspects. A
new tool's test starts like these (README, "Adding a tool").

tests/app holds the app's tests, and only they import ``mcp_tools``: the platform's tests serve
their own tools (tests/support/platform_tools) and pass with the features folder emptied
(``pytest --without-app`` runs them as if it were, leaving tests/app out). A team that replaces
the starter app replaces these tests with its own.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys

import mcp_tools
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.tools import tool_spec
from mcp_platform.testing import ToolHarness
from mcp_tools.countdown import countdown
from mcp_tools.counter_view import VIEW_URI, counter_view
from mcp_tools.echo import echo
from mcp_tools.session_counter import increment_counter
from mcp_tools.session_notes import append_note, read_notes
from mcp_tools.session_resources import session_notes
from mcp_tools.summarize_session import summarize_session


def test_echo_returns_its_text_as_the_result() -> None:
    result = asyncio.run(ToolHarness().call(echo, text="hi"))
    assert result["content"] == [{"type": "text", "text": "hi"}]
    assert result["structuredContent"] == {"result": "hi"}  # `-> str`, wrapped as the SDK does


def test_increment_counter_computes_from_the_seeded_attributes_and_commits_the_new_value() -> None:
    """Given a session whose counter is at 2, when it is incremented, then the call answers 3 and
    the session holds it, one version later (read-modify-write, D2)."""
    harness = ToolHarness(principal="alice", attributes={"counters": {"hits": 2}})
    result = asyncio.run(harness.call(increment_counter, name="hits"))
    assert result["structuredContent"] == {"name": "hits", "value": 3}
    assert harness.session.attributes["counters"] == {"hits": 3} and harness.session.version == 2


def test_notes_are_appended_to_the_session_and_an_empty_one_is_refused() -> None:
    harness = ToolHarness()
    asyncio.run(harness.call(append_note, text="first"))
    refused = asyncio.run(harness.call(append_note, text="  "))
    assert refused == {"content": [{"type": "text", "text": "text must not be empty"}], "isError": True}
    notes = asyncio.run(harness.call(read_notes))["structuredContent"]
    assert notes == {"notes": [{"role": "note", "text": "first"}], "total": 1}


def test_countdown_sends_a_progress_notification_per_step() -> None:
    harness = ToolHarness()
    result = asyncio.run(harness.call(countdown, steps=2, interval_ms=0))
    assert result["structuredContent"] == {"result": "counted 2 steps"}
    progress = [n["params"]["progress"] for n in harness.notifications if n["method"] == "notifications/progress"]
    assert progress == [0, 1, 2]


def test_the_notes_resource_and_the_summary_prompt_read_the_session() -> None:
    harness = ToolHarness(context=[{"role": "note", "text": "buy milk"}])
    (notes,) = asyncio.run(harness.read(session_notes, session=harness.session.id))
    assert notes["text"] == "- buy milk" and notes["mimeType"] == "text/markdown"
    messages = asyncio.run(harness.get_prompt(summarize_session, session=harness.session.id, style="bullet points"))
    assert messages[0]["content"]["text"] == "Summarise these session notes (bullet points):"
    assert messages[1]["content"]["resource"]["text"] == "- buy milk"


def test_every_module_of_the_features_folder_is_discovered_and_every_feature_is_described() -> None:
    """Discovery imports each module (one without a feature fails the start); the starter app
    keeps echo, the notes and counter tools, the notes resource and the summary prompt."""
    catalog = Catalog.discover(mcp_tools)
    tools = [catalog.tools.get(name) for name in catalog.tools.names()]
    specs = [*tools, *catalog.resources.values(), *catalog.templates.values(), *catalog.prompts.values()]
    assert all(spec is not None and spec.description for spec in specs)
    assert {"echo", "append_note", "read_notes", "increment_counter"} <= set(catalog.tools.names())
    assert "session_notes" in catalog.templates and "summarize_session" in catalog.prompts


def test_the_starter_app_starts_without_importing_pydantic() -> None:
    """Cold start of the deployed endpoint: none of the starter app's modules uses a pydantic
    model, so discovering them loads no pydantic (the platform never imports it itself)."""
    code = (
        "import sys, mcp_tools\n"
        "from mcp_platform.bootstrap.endpoint import build_app\n"
        "from mcp_platform.protocol.catalog import Catalog\n"
        "Catalog.discover(mcp_tools)\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('pydantic', 'pydantic_core')))\n"
    )
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=False)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_counter_view_is_a_self_contained_page_the_counter_tool_names() -> None:
    """Given increment_counter's view, when it is read, then it is an MCP Apps page (the app MIME
    type, a border asked for) that loads nothing from elsewhere (the host's default CSP allows
    inline script and style only) and calls the tool it renders."""
    (page,) = asyncio.run(ToolHarness().read(counter_view))
    assert page["uri"] == VIEW_URI and page["mimeType"] == "text/html;profile=mcp-app"
    assert page["_meta"] == {"ui": {"prefersBorder": True}}
    assert not re.search(r"\b(src|href)\s*=|@import|url\(|https?://", page["text"])
    assert '"tools/call", { name: "increment_counter"' in page["text"]
    assert tool_spec(increment_counter).describe()["_meta"] == {"ui": {"resourceUri": VIEW_URI}}
