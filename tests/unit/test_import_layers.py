"""Finer rules than the import contracts (pyproject.toml): the transport is the only user of the
MCP server (``application.server``) besides the composition root, which builds it;
``protocol.request_context`` and ``protocol.binding`` depend on nothing of the protocol core (the request's
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
    # The request's span type, its caller's access and the JSON types: leaf modules, the span's and
    # the JSON types' importing nothing of the platform, the access's only the JSON-RPC errors.
    leaves = ("mcp_platform.protocol.trace_context", "mcp_platform.protocol.access", "mcp_platform.protocol.jsonrpc")
    request_context = imported_modules(PACKAGE / "protocol" / "request_context.py")
    assert request_context and all(name.startswith(leaves) for name in request_context), request_context
    assert imported_modules(PACKAGE / "protocol" / "trace_context.py") == set()
    assert imported_modules(PACKAGE / "protocol" / "jsonrpc.py") == set()
    leaf = imported_modules(PACKAGE / "protocol" / "access.py")
    assert all(name.startswith("mcp_platform.protocol.jsonrpc") for name in leaf), leaf
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


UNIT = Path(__file__).parent
# The layers of mcp_platform, lowest first (the import contracts in pyproject.toml); a layer's
# unit tests may import it and what is below it, never what is above.
LAYER_RANK = {"protocol": 0, "application": 1, "authorization_server": 2, "adapters": 3, "transport": 3, "bootstrap": 4}
NOT_PACKAGES = {"layer", "local"}  # the built layer's and the local platform's tests


def test_the_unit_tests_mirror_the_packages() -> None:
    """Each folder of tests/unit is a package of mcp_platform (or the layer build, or local/)."""
    folders = [path.relative_to(UNIT) for path in UNIT.rglob("*") if path.is_dir() and path.name != "__pycache__"]
    strays = [str(f) for f in folders if f.parts[0] not in NOT_PACKAGES and not (PACKAGE / f).is_dir()]
    assert not strays, strays


def test_a_layers_unit_tests_import_nothing_above_it() -> None:
    """A test that needs an adapter (or the root) with a use case is that adapter's (or the
    root's) test, and lives in its folder."""
    above: dict[str, list[str]] = {}
    for layer, rank in LAYER_RANK.items():
        for path in (UNIT / layer).rglob("test_*.py"):
            layers = {name.split(".")[1] for name in imported_modules(path) if name.count(".") >= 1}
            higher = sorted(other for other in layers if LAYER_RANK.get(other, -1) > rank)
            if higher:
                above[str(path.relative_to(UNIT))] = higher
    assert not above, above


ROOTS = ("config.py", "bootstrap/", "ops/")  # the settings, the composition root, the operator commands


def test_only_the_root_reads_the_environment() -> None:
    """``os.environ``/``os.getenv`` and the settings' constructors (``Settings.from_env`` and
    ``from_mapping``) appear only in config.py, the root and the operator commands: the layers get
    values handed in."""
    readers = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith(ROOTS):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and (
                (node.attr in ("environ", "getenv") and isinstance(node.value, ast.Name) and node.value.id == "os")
                or node.attr in ("from_env", "from_mapping")
            ):
                readers.append(f"{relative}:{node.lineno}")
    assert not readers, readers


# The paths that run in a worker thread whatever the root's blocking strategy, each named with
# its reason in application/blocking.py; everything else goes through the strategy.
WORKER_THREAD_PATHS = {
    "protocol/signature.py",  # a plain def tool's own code
    "adapters/kinesis/producer.py",  # the shared group flush
    "adapters/jwks.py",  # one key refresh shared by the requests waiting for it
    "application/tool_calls.py",  # a commit a cancellation must not wait for
}


def test_blocking_calls_go_through_the_roots_strategy() -> None:
    callers = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "to_thread":
                callers.add(path.relative_to(PACKAGE).as_posix())
    assert callers - {"application/blocking.py"} == WORKER_THREAD_PATHS
