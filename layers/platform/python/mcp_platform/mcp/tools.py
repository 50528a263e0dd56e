"""Tool definitions and the catalog that discovers them.

A tool is one module in a tools package that defines a module-level :class:`ToolSpec`, made
with the :func:`tool` decorator. Discovery is explicit: :meth:`ToolCatalog.discover` imports
every module of the package it is given and collects the specs it finds; nothing registers
itself by import side effect, and a module that defines no tool is reported, not ignored.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from mcp_platform.mcp.schema import input_schema, validate
from mcp_platform.mcp.versions import SESSION_HANDLE_ARGUMENT

SessionUse = Literal["none", "required"]
Effect = Literal["read_only", "append_only", "read_modify_write"]
ToolFunction = Callable[..., Awaitable[Any]]

READ_ONLY: Effect = "read_only"
"""Reads the session, writes nothing to it: no transaction, no version bump, never a conflict."""
APPEND_ONLY: Effect = "append_only"
"""Only appends (context entries, new items): one transaction conditioned on "alive" alone, so
any number of parallel calls on one session all commit (D3 ``list_append`` is atomic)."""
READ_MODIFY_WRITE: Effect = "read_modify_write"
"""Computes new session fields from the ones it read: committed under the D2 version condition;
on a conflict the tool runs again on the fresh state. The default: always correct."""
EFFECTS: tuple[Effect, ...] = (READ_ONLY, APPEND_ONLY, READ_MODIFY_WRITE)


class ToolError(Exception):
    """Raised by a tool for an expected failure: answered as a result with ``isError: true``."""


@dataclass(frozen=True)
class ToolResult:
    """Full control over a tools/call result (plain return values are converted)."""

    content: list[dict[str, Any]]
    structured: dict[str, Any] | None = None
    is_error: bool = False

    def to_result(self) -> dict[str, Any]:
        result: dict[str, Any] = {"content": self.content, "isError": self.is_error}
        if self.structured is not None:
            result["structuredContent"] = self.structured
        return result


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    function: ToolFunction
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    title: str | None = None
    session: SessionUse = "none"
    """``required``: the call runs against an application session, committed atomically (D10)."""
    effect: Effect | None = None
    """What a session tool does to its session (None for tools without a session)."""

    def describe(self) -> dict[str, Any]:
        """The tools/list entry (identical in both protocol eras)."""
        entry: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }
        if self.title:
            entry["title"] = self.title
        if self.output_schema is not None:
            entry["outputSchema"] = self.output_schema
        if self.annotations:
            entry["annotations"] = self.annotations
        return entry

    def validate_arguments(self, arguments: dict[str, Any]) -> None:
        validate(arguments, self.input_schema)


def tool(
    *,
    description: str,
    name: str | None = None,
    title: str | None = None,
    annotations: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
    session: SessionUse = "none",
    effect: Effect | None = None,
) -> Callable[[ToolFunction], ToolSpec]:
    """Turn an ``async def tool(ctx, ...)`` into a :class:`ToolSpec` (no global registration).

    A session tool declares its ``effect`` on the session; undeclared, it is
    ``read_modify_write``, the one that is correct whatever the tool does (at the price of
    conflicts under parallel calls). ``readOnlyHint`` follows a ``read_only`` effect."""

    def build(function: ToolFunction) -> ToolSpec:
        if not inspect.iscoroutinefunction(function):
            raise TypeError(f"tool {function.__name__} must be an async function")
        declared = _session_effect(function.__name__, session, effect, annotations or {})
        schema = input_schema(function, skip=("ctx", SESSION_HANDLE_ARGUMENT))
        if session == "required":
            # The handle is optional in the schema: a 2025-era caller may rely on its
            # transport session, and list results must not vary per connection.
            schema["properties"][SESSION_HANDLE_ARGUMENT] = {
                "type": "string",
                "description": "Application session handle returned by open_session "
                "(optional on 2025 connections: defaults to the connection's own session).",
            }
        return ToolSpec(
            name=name or function.__name__,
            description=description,
            function=function,
            input_schema=schema,
            output_schema=output_schema,
            annotations={**(annotations or {}), **({"readOnlyHint": True} if declared == READ_ONLY else {})},
            title=title,
            session=session,
            effect=declared,
        )

    return build


def _session_effect(
    name: str, session: SessionUse, effect: Effect | None, annotations: dict[str, Any]
) -> Effect | None:
    if session != "required":
        if effect is not None:
            raise TypeError(f"tool {name}: effect applies only to tools with session='required'")
        return None
    declared = effect or READ_MODIFY_WRITE
    if declared not in EFFECTS:
        raise TypeError(f"tool {name}: effect must be one of {', '.join(EFFECTS)}, got {declared!r}")
    hint = annotations.get("readOnlyHint")
    if hint is not None and bool(hint) != (declared == READ_ONLY):
        raise TypeError(f"tool {name}: readOnlyHint={hint} contradicts effect {declared!r}")
    return declared


class ToolCatalog:
    """The tools a server offers, in a deterministic (name) order."""

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._by_name: dict[str, ToolSpec] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: ToolSpec) -> None:
        if spec.name in self._by_name:
            raise ValueError(f"duplicate tool name {spec.name!r}")
        self._by_name[spec.name] = spec

    def get(self, name: str) -> ToolSpec | None:
        return self._by_name.get(name)

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def listing(self) -> list[dict[str, Any]]:
        return [self._by_name[name].describe() for name in self.names()]

    @classmethod
    def discover(cls, *packages: ModuleType) -> ToolCatalog:
        """Import every module of each package and collect its module-level ToolSpecs."""
        catalog = cls()
        for module in (module for package in packages for module in iter_tool_modules(package)):
            specs = [value for value in vars(module).values() if isinstance(value, ToolSpec)]
            if not specs:
                raise ValueError(f"tool module {module.__name__} defines no tool")
            for spec in specs:
                catalog.add(spec)
        return catalog


def iter_tool_modules(package: ModuleType) -> list[ModuleType]:
    prefix = package.__name__ + "."
    return [
        importlib.import_module(prefix + info.name)
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name)
        if not info.name.startswith("_")
    ]


def to_result(value: Any) -> dict[str, Any]:
    """Convert a tool's return value into a CallToolResult."""
    if isinstance(value, ToolResult):
        return value.to_result()
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}], "isError": False}
    if isinstance(value, dict):
        text = json.dumps(value, separators=(",", ":"), default=str)
        return {"content": [{"type": "text", "text": text}], "structuredContent": value, "isError": False}
    if value is None:
        return {"content": [], "isError": False}
    raise TypeError(f"tool returned {type(value).__name__}; return str, dict, ToolResult or None")


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}
