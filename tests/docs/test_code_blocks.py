"""The authoring example the README shows is run as written: the tool module served by the
harness, and the test shown beside it, so the front page cannot drift from the API (the building
pages' blocks, the same example included: test_page_blocks.py)."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md",)
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(page: Path) -> list[str]:
    return PYTHON_BLOCK.findall(page.read_text())


@pytest.fixture
def feature_module() -> Iterator[None]:
    """The page's tool, importable as the starter app's module the page's test imports."""
    yield
    sys.modules.pop("mcp_tools.place_order", None)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_the_adding_a_tool_example_runs_as_shown(page: Path, feature_module: None) -> None:
    # Given the page's tool module and the test shown with it
    tool_source, test_source = python_blocks(page)[:2]
    assert "@tool" in tool_source and "ToolHarness" in test_source
    module = types.ModuleType("mcp_tools.place_order")
    exec(compile(tool_source, f"{page.name}: the tool", "exec"), module.__dict__)
    sys.modules["mcp_tools.place_order"] = module
    # When the shown test runs / Then it passes: the schema, the conversion and the result are as documented
    namespace: dict[str, object] = {}
    exec(compile(test_source, f"{page.name}: the test", "exec"), namespace)
    tests = [value for name, value in namespace.items() if name.startswith("test_") and callable(value)]
    assert tests
    for test in tests:
        test()
