"""Tool definitions and the tool catalog (discovery of feature modules: :mod:`mcp.catalog`).

A tool is one module in a features package that defines a module-level :class:`ToolSpec`, made
with the :func:`tool` decorator. Discovery is explicit: :meth:`mcp.catalog.Catalog.discover` imports
every module of the package it is given and collects the specs it finds; nothing registers
itself by import side effect, and a module that defines no tool is reported, not ignored.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import pkgutil
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from mcp_platform.mcp.schema import Check, compile_schema, input_schema, validate_2020_12
from mcp_platform.mcp.versions import SESSION_HANDLE_ARGUMENT

SessionUse = Literal["none", "required"]
Effect = Literal["read_only", "append_only", "read_modify_write"]
TaskSupport = Literal["forbidden", "optional", "required"]
Consistency = Literal["consistent", "eventual"]
CONSISTENCIES: tuple[Consistency, ...] = ("consistent", "eventual")
TASK_SUPPORT: tuple[TaskSupport, ...] = ("forbidden", "optional", "required")
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
SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
# A declared ``max_seconds`` may not exceed Lambda's 15-minute timeout; at run time the
# endpoint's stream cap (MCP_STREAM_MAX_SECONDS) bounds it further, and bounds undeclared tools.
MAX_TOOL_SECONDS = 900


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
    max_seconds: float | None = None
    """How long one call may run before it is stopped (an isError result); None: the stream cap."""

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

    client_capabilities: dict[str, Any] = field(default_factory=dict)
    """Client capabilities a call needs (e.g. ``{"sampling": {}}``): refused with -32021 when the
    request (2026) or the session's initialize (2025) did not declare them."""
    explicit_schema: bool = False
    """The input schema was written by hand (any JSON Schema 2020-12), not derived from hints."""
    scopes: tuple[str, ...] = ()
    """OAuth scopes a token must carry to call it (403 insufficient_scope otherwise); credentials
    that are not scope-limited (API keys) may call it."""
    consistency: Consistency = "consistent"
    """How a session tool's session is read (X6). ``eventual``, for read-only tools only: the read
    may be served by the DAX item cache, so it can miss a change another writer made in the last
    item-cache TTL (5 min by default) through a path that bypasses DAX; a missing or expired
    session is always confirmed by a consistent read. Default: the latest state."""
    task_support: TaskSupport = "forbidden"
    """Tasks extension: ``optional``/``required`` run the call in the task worker when the client
    declared the extension (``required`` refuses the call otherwise, -32021). Server-side only:
    the extension defines no tools/list field for it."""
    ask_first: Callable[..., Mapping[str, Any]] | None = None
    """A task's questions asked before it starts (2026 rounds on the tools/call itself): called
    with the call's arguments, it returns ``{key: InputRequest}``; the answers reach the running
    task (``ctx.elicit(..., key=key)`` returns them)."""

    @functools.cached_property
    def mirrored_headers(self) -> tuple[tuple[str, str], ...]:
        """SEP-2243: (argument, header name) for each argument the input schema marks
        ``x-mcp-header`` (read once per tool, not per call)."""
        properties = self.input_schema.get("properties") or {}
        return tuple(
            (argument, schema["x-mcp-header"])
            for argument, schema in properties.items()
            if isinstance(schema, dict) and isinstance(schema.get("x-mcp-header"), str)
        )

    @functools.cached_property
    def _check_arguments(self) -> Check:
        return compile_schema(self.input_schema)

    def validate_arguments(self, arguments: dict[str, Any]) -> None:
        if self.explicit_schema:
            validate_2020_12(arguments, self.input_schema)
        else:
            self._check_arguments(arguments, "arguments")


def tool(
    *,
    description: str,
    name: str | None = None,
    title: str | None = None,
    annotations: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
    session: SessionUse = "none",
    effect: Effect | None = None,
    max_seconds: float | None = None,
    requires_client: dict[str, Any] | None = None,
    explicit_schema: dict[str, Any] | None = None,
    scopes: Iterable[str] = (),
    task: TaskSupport = "forbidden",
    ask_first: Callable[..., Mapping[str, Any]] | None = None,
    consistency: Consistency = "consistent",
) -> Callable[[ToolFunction], ToolSpec]:
    """Turn an ``async def tool(ctx, ...)`` into a :class:`ToolSpec` (no global registration).

    A session tool declares its ``effect`` on the session; undeclared, it is
    ``read_modify_write``, the one that is correct whatever the tool does (at the price of
    conflicts under parallel calls). ``readOnlyHint`` follows a ``read_only`` effect.
    ``max_seconds`` is the longest one call may run (at most the endpoint's stream cap).
    ``requires_client`` names the client capabilities a call needs; ``explicit_schema`` serves a
    hand-written JSON Schema 2020-12 input schema intact and validates calls against it.
    ``scopes`` are the OAuth scopes a token needs to call the tool. ``task`` (``optional``,
    ``required``) lets a long call run as a durable task in the task worker (tasks extension);
    ``ask_first(**arguments)`` names the questions answered before the task starts.
    ``consistency="eventual"`` lets a read-only session tool read its session from the DAX item
    cache (X6; see :attr:`ToolSpec.consistency` for what a caller may then see)."""

    def build(function: ToolFunction) -> ToolSpec:
        if not inspect.iscoroutinefunction(function):
            raise TypeError(f"tool {function.__name__} must be an async function")
        if max_seconds is not None and not 0 < max_seconds <= MAX_TOOL_SECONDS:
            raise TypeError(f"tool {function.__name__}: max_seconds must be in (0, {MAX_TOOL_SECONDS}]")
        declared = _session_effect(function.__name__, session, effect, annotations or {})
        if ask_first is not None and task == "forbidden":
            raise TypeError(f"tool {function.__name__}: ask_first applies only to task tools")
        if task not in TASK_SUPPORT:
            raise TypeError(f"tool {function.__name__}: task must be one of {', '.join(TASK_SUPPORT)}, got {task!r}")
        if consistency not in CONSISTENCIES:
            raise TypeError(
                f"tool {function.__name__}: consistency must be consistent or eventual, got {consistency!r}"
            )
        if consistency == "eventual" and declared != READ_ONLY:
            raise TypeError(f"tool {function.__name__}: consistency='eventual' is for read_only session tools only")
        required = tuple(dict.fromkeys(scopes))
        if any(not SCOPE_TOKEN.fullmatch(scope) for scope in required):  # RFC 6749 section 3.3
            raise TypeError(f"tool {function.__name__}: scopes must be scope tokens, got {required!r}")
        schema = (
            dict(explicit_schema)
            if explicit_schema is not None
            else input_schema(function, skip=("ctx", SESSION_HANDLE_ARGUMENT))
        )
        if session == "required" and explicit_schema is None:
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
            max_seconds=max_seconds,
            client_capabilities=dict(requires_client or {}),
            explicit_schema=explicit_schema is not None,
            scopes=required,
            task_support=task,
            ask_first=ask_first,
            consistency=consistency,
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


def iter_feature_modules(package: ModuleType) -> list[ModuleType]:
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
