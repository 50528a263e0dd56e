"""Discovery of decorated functions (mcp.catalog): each feature once, where it is defined."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from mcp_platform.protocol.catalog import Catalog, spec_of

ALPHA = '''
from mcp_platform import ToolContext, tool, prompt, resource


@tool
def shared(text: str) -> str:
    """Shared by import."""
    return text


@resource("demo://readme")
def readme() -> str:
    """A fixed resource."""
    return "hello"


@prompt
def greet(name: str) -> str:
    return "Hello " + name
'''
BETA = '''
from mcp_platform import tool
from {package}.alpha import shared, readme


@tool
async def uses_shared(text: str) -> str:
    """Calls the imported tool, which stays alpha's."""
    return shared(text)
'''
ONLY_REEXPORTS = """
from {package}.alpha import shared as also_shared
"""
CLASH = """
from mcp_platform import tool


@tool(name="shared")
def another(text: str) -> str:
    return text
"""


@pytest.fixture
def make_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.syspath_prepend(str(tmp_path))
    made: list[str] = []

    def make(name: str, **modules: str) -> ModuleType:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "__init__.py").write_text("")
        for module, source in modules.items():
            (folder / f"{module}.py").write_text(textwrap.dedent(source.replace("{package}", name)))
        made.append(name)
        return importlib.import_module(name)

    yield make
    for name in made:
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]


def test_a_feature_imported_by_another_module_is_registered_once(make_package) -> None:  # type: ignore[no-untyped-def]
    """Given beta importing alpha's tool and resource (and a module only re-exporting it), when
    the package is discovered, then each feature is registered once, as alpha's."""
    package = make_package("importing_pkg", alpha=ALPHA, beta=BETA, gamma=ONLY_REEXPORTS)
    catalog = Catalog.discover(package)
    assert catalog.tools.names() == ["shared", "uses_shared"]
    assert list(catalog.resources) == ["demo://readme"] and list(catalog.prompts) == ["greet"]
    alpha = importlib.import_module("importing_pkg.alpha")
    assert catalog.tools.get("shared") is spec_of(alpha.shared)


def test_two_different_features_of_one_name_fail_naming_both(make_package) -> None:  # type: ignore[no-untyped-def]
    package = make_package("clashing_pkg", alpha=ALPHA, clash=CLASH)
    with pytest.raises(
        ValueError, match=r"duplicate tool name 'shared': clashing_pkg\.alpha\.shared and clashing_pkg\.clash\.another"
    ):
        Catalog.discover(package)


def test_discovery_after_a_module_is_reloaded_takes_its_new_definition(make_package) -> None:  # type: ignore[no-untyped-def]
    """A reloaded module's tool is a new object while another module still holds the old one:
    still one tool, the reloaded one (the dev loop re-imports the modules it saw change)."""
    package = make_package("reloaded_pkg", alpha=ALPHA, beta=BETA)
    Catalog.discover(package)
    alpha = importlib.reload(importlib.import_module("reloaded_pkg.alpha"))
    catalog = Catalog.discover(package)
    assert catalog.tools.get("shared") is spec_of(alpha.shared)


def test_catalog_of_takes_the_decorated_functions_and_refuses_anything_else(make_package) -> None:  # type: ignore[no-untyped-def]
    make_package("listed_pkg", alpha=ALPHA)
    alpha = importlib.import_module("listed_pkg.alpha")
    catalog = Catalog.of([alpha.shared, alpha.readme, alpha.greet])
    assert catalog.tools.names() == ["shared"] and list(catalog.prompts) == ["greet"]
    with pytest.raises(TypeError, match="not a feature"):
        Catalog.of([len])
