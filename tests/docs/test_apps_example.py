"""The building guide's MCP Apps example runs as written: its module is served with the listing the
page describes, the view test shown beside it passes, and its page works behind the official host
bridge (the page's script is as much the example as its Python)."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_platform.protocol.catalog import Catalog
from tests.support.app_host import render_view

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "building" / "tools.md"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
MODULE = "mcp_tools.weather"  # the name the page's test imports it by


@pytest.fixture
def example() -> Iterator[types.ModuleType]:
    """The page's MCP Apps module, and its view test after it."""
    blocks = PYTHON_BLOCK.findall(PAGE.read_text())
    (at,) = [index for index, block in enumerate(blocks) if "@ui_resource" in block]
    module = types.ModuleType(MODULE)
    exec(compile(blocks[at], f"{PAGE.name}: the MCP Apps example", "exec"), module.__dict__)
    module.view_test = blocks[at + 1]  # type: ignore[attr-defined]
    sys.modules[MODULE] = module
    yield module
    sys.modules.pop(MODULE, None)


def test_the_example_is_served_as_the_page_describes_and_its_test_passes(example: types.ModuleType) -> None:
    # Given the page's module, discovered as a feature module is
    catalog = Catalog.of([example.forecast, example.refresh_forecast, example.forecast_view])
    listed = {entry["name"]: entry["_meta"] for entry in catalog.tools.listing()}
    # Then its tools name the view as the page says, and the test the page shows passes
    assert listed["forecast"] == {"ui": {"resourceUri": "ui://weather/forecast.html"}}
    assert listed["refresh_forecast"] == {"ui": {"resourceUri": "ui://weather/forecast.html", "visibility": ["app"]}}
    namespace: dict[str, object] = {}
    exec(compile(example.view_test, f"{PAGE.name}: the view test", "exec"), namespace)
    tests = [value for name, value in namespace.items() if name.startswith("test_") and callable(value)]
    assert tests
    for test in tests:
        test()


@pytest.mark.integration
def test_the_example_page_shows_the_forecast_behind_the_host_bridge(example: types.ModuleType, tmp_path: Path) -> None:
    # Given the page's view, when a host renders it after a forecast call
    forecast = example.forecast("Oslo")
    result = {"content": [{"type": "text", "text": "Oslo: 21.5"}], "structuredContent": forecast}
    # Then it shows the forecast and acknowledges the teardown (a step that never happens fails)
    shown = [{"wait": ["#forecast", "Oslo: 21.5 °C"]}]
    report = render_view(example.FORECAST_HTML, tmp_path, result=result, steps=shown)
    assert report["teardown"] is True and report["calls"] == []
