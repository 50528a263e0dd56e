"""The conformance fixture pack: its fixed catalog, its loading by `python -m local --fixtures`,
and the notifications its tools send (the suite checks them by count, order and level)."""

from __future__ import annotations

import asyncio
import base64
import io
import wave
from typing import Any

import pytest

from examples import conformance
from examples.conformance._media import PNG_BASE64, WAV_BASE64
from local.__main__ import main
from local.fixtures import fixture_packages
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.context import ToolContext
from tests.support import platform_tools
from tests.support.services import make_services

# The fixture tools the suite's server scenarios call that the platform can serve today.
EXPECTED_TOOLS = [
    "confirm_delete",
    "failing_job",
    "greet",
    "json_schema_2020_12_tool",
    "multi_input",
    "protocol_error_job",
    "slow_compute",
    "test_audio_content",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_embedded_resource",
    "test_error_handling",
    "test_image_content",
    "test_input_required_result_capabilities",
    "test_input_required_result_elicitation",
    "test_input_required_result_list_roots",
    "test_input_required_result_multi_round",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_request_state",
    "test_input_required_result_sampling",
    "test_input_required_result_tampered_state",
    "test_logging_tool",
    "test_missing_capability",
    "test_multiple_content_types",
    "test_sampling",
    "test_simple_text",
    "test_streaming_elicitation",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_tool_with_task",
    "test_trigger_prompt_change",
    "test_trigger_resource_update",
    "test_trigger_tool_change",
    "test_x_mcp_header",
]


def test_the_pack_serves_exactly_the_expected_tools_next_to_the_platform_tools() -> None:
    assert Catalog.discover(conformance).tools.names() == EXPECTED_TOOLS
    together = Catalog.discover(platform_tools, conformance).tools.names()  # no name collides
    assert set(EXPECTED_TOOLS) < set(together)


def test_fixture_packs_are_loaded_by_name_and_unknown_names_refused() -> None:
    assert fixture_packages(["conformance", "conformance"]) == (conformance,)
    with pytest.raises(SystemExit, match="unknown fixture pack"):
        fixture_packages(["everything"])
    with pytest.raises(SystemExit) as refused:
        main(["--fixtures", "everything"])  # argparse refuses it before anything starts
    assert refused.value.code == 2


def test_media_fixtures_are_valid_png_and_wav() -> None:
    png = base64.b64decode(PNG_BASE64)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png[12:16] == b"IHDR"
    with wave.open(io.BytesIO(base64.b64decode(WAV_BASE64))) as audio:
        assert (audio.getnchannels(), audio.getframerate(), audio.getnframes()) == (1, 8000, 8)


def run_tool(name: str, **context: Any) -> tuple[Any, list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []

    async def notify(message: dict[str, Any]) -> None:
        sent.append(message)

    spec = Catalog.discover(conformance).tools.get(name)
    assert spec is not None
    ctx = ToolContext(principal="tester", services=make_services(), notify=notify, **context)
    return asyncio.run(spec.function(ctx)), sent


def test_progress_is_0_50_100_of_100_with_the_callers_token() -> None:
    result, sent = run_tool("test_tool_with_progress", progress_token="progress-test-1")
    assert isinstance(result, str) and result
    assert [(m["params"]["progressToken"], m["params"]["progress"], m["params"]["total"]) for m in sent] == [
        ("progress-test-1", 0, 100),
        ("progress-test-1", 50, 100),
        ("progress-test-1", 100, 100),
    ]
    _, silent = run_tool("test_tool_with_progress")  # no token: no notification
    assert silent == []


def test_logging_tools_log_at_info_and_only_when_a_level_was_asked() -> None:
    _, sent = run_tool("test_tool_with_logging", log_level="debug")
    assert [(m["method"], m["params"]["level"], m["params"]["data"]) for m in sent] == [
        ("notifications/message", "info", "Tool execution started"),
        ("notifications/message", "info", "Tool processing data"),
        ("notifications/message", "info", "Tool execution completed"),
    ]
    _, unasked = run_tool("test_logging_tool", log_level=None)
    assert unasked == []


class RecordingNotifications:
    """Stands in for ``notifications.Notifications``: records what a tool publishes."""

    def __init__(self) -> None:
        self.published: list[tuple[str, str]] = []

    async def resource_updated(self, uri: str, *, principal: str) -> None:
        self.published.append(("updated", uri))

    async def list_changed(self, kind: str) -> None:
        self.published.append(("list_changed", kind))


def test_the_triggers_publish_their_change_and_are_no_ops_with_subscriptions_off() -> None:
    recorded = RecordingNotifications()
    catalog = Catalog.discover(conformance)
    for name in ("test_trigger_resource_update", "test_trigger_tool_change", "test_trigger_prompt_change"):
        spec = catalog.tools.get(name)
        assert spec is not None
        asyncio.run(spec.function(ToolContext(principal="tester", services=make_services(notifications=recorded))))
        asyncio.run(spec.function(ToolContext(principal="tester", services=make_services())))  # off: nothing
    assert recorded.published == [
        ("updated", "test://watched-resource"),
        ("list_changed", "tools"),
        ("list_changed", "prompts"),
    ]
    assert "test://watched-resource" in catalog.resources
