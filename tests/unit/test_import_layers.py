"""Finer rules than the import contracts (pyproject.toml): the transport is the only user of the
MCP server (``application.server``) besides the composition root, which builds it;
``protocol.call`` and ``protocol.binding`` depend on nothing of the protocol core (the request's
span type, ``protocol.trace_context``, is a leaf), so no module needs a ``TYPE_CHECKING`` import
of the server to name a request's context."""

from __future__ import annotations

import ast
from pathlib import Path

import mcp_platform

PACKAGE = Path(mcp_platform.__file__).parent


def imported_modules(path: Path) -> set[str]:
    """Every mcp_platform module the file imports, wherever the import is (also TYPE_CHECKING)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("mcp_platform.")}


def module_name(path: Path) -> str:
    return ".".join(("mcp_platform", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")


def test_only_the_transport_and_the_composition_root_import_the_server() -> None:
    users = {
        module_name(path)
        for path in PACKAGE.rglob("*.py")
        if "mcp_platform.application.server" in imported_modules(path) and path.name != "server.py"
    }
    layers = ("mcp_platform.transport.", "mcp_platform.bootstrap.")
    assert users and all(name.startswith(layers) for name in users), users


def test_the_request_context_and_binding_import_nothing_of_the_protocol_core() -> None:
    # The request's span type: a leaf module, itself importing nothing of the platform.
    trace = {"mcp_platform.protocol.trace_context", "mcp_platform.protocol.trace_context.TraceContext"}
    assert imported_modules(PACKAGE / "protocol" / "call.py") == trace
    assert imported_modules(PACKAGE / "protocol" / "trace_context.py") == set()
    binding = imported_modules(PACKAGE / "protocol" / "binding.py")
    assert all(name.startswith("mcp_platform.protocol.jsonrpc") for name in binding), binding


def all_imports(path: Path) -> set[str]:
    """Every module the file imports, of any package."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_protocol_and_application_reach_the_network_only_through_ports() -> None:
    """The import contracts forbid socket, ssl and http there; urllib.request (a subpackage, which
    import-linter cannot forbid on its own: urllib.parse is fine) is checked here."""
    layers = [PACKAGE / "protocol", PACKAGE / "application", PACKAGE / "authorization_server"]
    offenders = {
        module_name(path): sorted(
            name for name in all_imports(path) if name.startswith(("urllib.request", "urllib.error"))
        )
        for layer in layers
        for path in layer.rglob("*.py")
    }
    assert not {name: found for name, found in offenders.items() if found}
