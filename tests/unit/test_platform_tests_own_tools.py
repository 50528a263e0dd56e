"""The platform's tests, benches and soak import nothing of the starter app: only tests/app and
tests/docs (the documentation's examples extend the app) import ``mcp_tools`` (the features
folder), so replacing or emptying the app breaks no platform
test. ``pytest --without-app`` shows they pass without it (tests/integration/test_without_app.py);
this finds an offending import at once, by name, without running anything."""

from __future__ import annotations

import ast

from tests.support.features import FEATURES_PACKAGE, ROOT

APP_TESTS = (ROOT / "tests" / "app", ROOT / "tests" / "docs")
PLATFORM_CODE = [
    *(path for path in (ROOT / "tests").rglob("*.py") if not any(tests in path.parents for tests in APP_TESTS)),
    *(ROOT / "bench").glob("*.py"),
    *(ROOT / "local").glob("soak*.py"),
]


def app_imports(source: str) -> list[str]:
    """Each import of the features package in ``source``: statements, and import_module calls
    with a constant name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            names = [arg.value for arg in node.args[:1] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        line = getattr(node, "lineno", 0)
        found += [(line, name) for name in names if name.split(".")[0] == FEATURES_PACKAGE]
    return [f"line {line}: {name}" for line, name in sorted(found)]


def test_no_platform_test_bench_or_soak_imports_the_starter_app() -> None:
    offending = {str(path.relative_to(ROOT)): app_imports(path.read_text()) for path in PLATFORM_CODE}
    assert {path: lines for path, lines in offending.items() if lines} == {}, (
        "serve tests/support/platform_tools instead (tests/support/endpoint.py, local_platform.py)"
    )


def test_the_check_finds_each_way_of_importing_the_app() -> None:
    source = (
        "import mcp_tools\n"
        "from mcp_tools.echo import echo\n"
        "import importlib\n"
        "def f():\n"
        "    import mcp_tools.countdown as c\n"
        "    return importlib.import_module('mcp_tools.echo')\n"
        "from tests.support import platform_tools\n"
        "from . import sibling\n"
    )
    assert app_imports(source) == [
        "line 1: mcp_tools",
        "line 2: mcp_tools.echo",
        "line 5: mcp_tools.countdown",
        "line 6: mcp_tools.echo",
    ]
    assert (ROOT / "tests" / "app" / "test_starter_app.py") not in PLATFORM_CODE and len(PLATFORM_CODE) > 100
