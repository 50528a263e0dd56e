"""Tool definitions and the tool catalog (discovery of feature modules: :mod:`mcp.catalog`).

A tool is a function in a feature module decorated with :func:`tool`, which returns the function
itself (still callable) with a :class:`ToolSpec` attached. Written as the SDK's MCPServer documents
tools: a sync or async function, its docstring the description, its type hints the input and
output schemas, a :class:`~mcp.context.ToolContext` parameter under any name. Discovery is
explicit: :meth:`mcp.catalog.Catalog.discover` imports every module of the package it is given
and collects the tools it finds; nothing registers itself by import side effect, and a module
that defines no tool is reported, not ignored.
"""

from __future__ import annotations

import functools
import importlib
import json
import pkgutil
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal, overload

from mcp_platform.protocol.apps import ToolUi, Visibility
from mcp_platform.protocol.decorated import Decorated, attach, attached, defined_at, feature_description, feature_name
from mcp_platform.protocol.jsonrpc import JSONObject, JSONValue
from mcp_platform.protocol.schema import Check, SchemaError, validate_2020_12
from mcp_platform.protocol.signature import Output, Signature, json_arguments, output_of, signature_of
from mcp_platform.protocol.versions import SESSION_HANDLE_ARGUMENT

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

    content: Sequence[Mapping[str, JSONValue]]
    structured: Mapping[str, JSONValue] | None = None
    is_error: bool = False

    def to_result(self) -> JSONObject:
        result: JSONObject = {"content": self.content, "isError": self.is_error}
        if self.structured is not None:
            result["structuredContent"] = self.structured
        return result


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    function: Callable[..., Any]
    """The decorated function, as written (sync or async, its context under any name)."""
    input_schema: JSONObject
    run: ToolFunction
    """``run(ctx, **arguments)``: the function called as the platform calls it (arguments
    converted to their declared types, a sync function in a worker thread)."""
    to_result: Callable[[Any], JSONObject]
    """The CallToolResult of a returned value (structured as the return annotation implies)."""
    output_schema: JSONObject | None = None
    annotations: JSONObject = field(default_factory=dict)
    title: str | None = None
    session: SessionUse = "none"
    """``required``: the call runs against an application session, committed atomically (D10)."""
    effect: Effect | None = None
    """What a session tool does to its session (None for tools without a session)."""
    max_seconds: float | None = None
    """How long one call may run before it is stopped (an isError result); None: the stream cap."""
    ui: ToolUi | None = None
    """MCP Apps: the ``ui://`` view a host renders the tool's results in (``_meta.ui``)."""

    def describe(self) -> JSONObject:
        """The tools/list entry (identical in both protocol eras)."""
        entry: JSONObject = {
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
        if self.ui is not None:
            entry["_meta"] = {"ui": self.ui.to_meta()}
        return entry

    client_capabilities: JSONObject = field(default_factory=dict)
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
    reads_context: bool = True
    """Whether a session tool's calls load its session's context (``ctx.session.context``): False
    for an append-only tool and for one declared ``reads_context=False``, whose session is then
    loaded without it (no read of its context items) and which is refused the context if it asks."""
    task_support: TaskSupport = "forbidden"
    """Tasks extension: ``optional``/``required`` run the call in the task worker when the client
    declared the extension (``required`` refuses the call otherwise, -32021). Server-side only:
    the extension defines no tools/list field for it."""
    ask_first: Callable[..., Mapping[str, Any]] | None = None
    """A task's questions asked before it starts (2026 rounds on the tools/call itself): called
    with the call's arguments, it returns ``{key: InputRequest}``; the answers reach the running
    task (``ctx.elicit(..., key=key)`` returns them)."""
    check_arguments: Check | None = None
    """The compiled check of a call's derived arguments (None with a hand-written schema)."""

    @functools.cached_property
    def mirrored_headers(self) -> tuple[tuple[str, str], ...]:
        """SEP-2243: (argument, header name) for each argument the input schema marks
        ``x-mcp-header`` (read once per tool, not per call)."""
        properties = self.input_schema.get("properties")
        if not isinstance(properties, Mapping):
            return ()
        return tuple(
            (argument, schema["x-mcp-header"])
            for argument, schema in properties.items()
            if isinstance(schema, dict) and isinstance(schema.get("x-mcp-header"), str)
        )

    def validate_arguments(self, arguments: JSONObject) -> None:
        """ValueError naming the first offending argument: a type error, or a value its
        declared type refuses (a pydantic constraint, a date that does not parse)."""
        if self.check_arguments is None:
            validate_2020_12(arguments, self.input_schema)
        else:
            self.check_arguments(arguments, "arguments")


_SESSION_HANDLE = {
    SESSION_HANDLE_ARGUMENT: {
        "type": "string",
        "description": "Application session handle returned by open_session "
        "(optional on 2025 connections: defaults to the connection's own session).",
    }
}


@overload
def tool(function: Decorated, /) -> Decorated: ...


@overload
def tool(
    *,
    description: str | None = None,
    name: str | None = None,
    title: str | None = None,
    annotations: JSONObject | None = None,
    output_schema: JSONObject | None = None,
    structured_output: bool | None = None,
    session: SessionUse = "none",
    effect: Effect | None = None,
    max_seconds: float | None = None,
    requires_client: JSONObject | None = None,
    explicit_schema: JSONObject | None = None,
    scopes: Iterable[str] = (),
    task: TaskSupport = "forbidden",
    ask_first: Callable[..., Mapping[str, Any]] | None = None,
    consistency: Consistency = "consistent",
    reads_context: bool = True,
    ui: str | None = None,
    visibility: Iterable[Visibility] | None = None,
) -> Callable[[Decorated], Decorated]: ...


def tool(
    function: Decorated | None = None,
    /,
    *,
    description: str | None = None,
    name: str | None = None,
    title: str | None = None,
    annotations: JSONObject | None = None,
    output_schema: JSONObject | None = None,
    structured_output: bool | None = None,
    session: SessionUse = "none",
    effect: Effect | None = None,
    max_seconds: float | None = None,
    requires_client: JSONObject | None = None,
    explicit_schema: JSONObject | None = None,
    scopes: Iterable[str] = (),
    task: TaskSupport = "forbidden",
    ask_first: Callable[..., Mapping[str, Any]] | None = None,
    consistency: Consistency = "consistent",
    reads_context: bool = True,
    ui: str | None = None,
    visibility: Iterable[Visibility] | None = None,
) -> Decorated | Callable[[Decorated], Decorated]:
    """Make a function a tool: ``@tool`` or ``@tool(...)``; returns the function, its
    :class:`ToolSpec` attached (no global registration).

    The description defaults to the docstring; the input schema comes from the type hints (the
    parameter annotated :class:`~mcp.context.ToolContext`, any name, receives the context), the
    output schema from the return annotation (``structured_output=False``: none;
    ``output_schema``: written by hand). A plain ``def`` runs in a worker thread.

    A session tool declares its ``effect`` on the session; undeclared, it is
    ``read_modify_write``, the one that is correct whatever the tool does (at the price of
    conflicts under parallel calls). ``readOnlyHint`` follows a ``read_only`` effect.
    ``max_seconds`` is the longest one call may run (at most the endpoint's stream cap).
    ``requires_client`` names the client capabilities a call needs; ``explicit_schema`` serves a
    hand-written JSON Schema 2020-12 input schema intact and validates calls against it (the
    arguments then reach the function as given). ``scopes`` are the OAuth scopes a token needs
    to call the tool. ``task`` (``optional``, ``required``) lets a long call run as a durable
    task in the task worker (tasks extension); ``ask_first(**arguments)`` names the questions
    answered before the task starts. ``consistency="eventual"`` lets a read-only session tool
    read its session from the DAX item cache (X6; :attr:`ToolSpec.consistency` says what a caller
    may then see). ``reads_context=False``: a session tool that never reads ``ctx.session.context``
    is served without loading it, so its calls cost the same whatever the session holds (an
    append-only tool never loads it). ``ui="ui://..."`` names the MCP Apps view a host renders the results in (a
    ``@ui_resource`` of the features, else the start fails), ``visibility`` who may call the tool:
    ``["model", "app"]`` (the default), ``["app"]`` (the view only: hosts hide it from the model)."""

    def build(function: Decorated) -> Decorated:
        tool_name = feature_name(function, name, "tool")
        if max_seconds is not None and not 0 < max_seconds <= MAX_TOOL_SECONDS:
            raise TypeError(f"tool {tool_name}: max_seconds must be in (0, {MAX_TOOL_SECONDS}]")
        declared = _session_effect(tool_name, session, effect, annotations or {})
        if ask_first is not None and task == "forbidden":
            raise TypeError(f"tool {tool_name}: ask_first applies only to task tools")
        if task not in TASK_SUPPORT:
            raise TypeError(f"tool {tool_name}: task must be one of {', '.join(TASK_SUPPORT)}, got {task!r}")
        if consistency not in CONSISTENCIES:
            raise TypeError(f"tool {tool_name}: consistency must be consistent or eventual, got {consistency!r}")
        if consistency == "eventual" and declared != READ_ONLY:
            raise TypeError(f"tool {tool_name}: consistency='eventual' is for read_only session tools only")
        if not reads_context and session != "required":
            raise TypeError(f"tool {tool_name}: reads_context applies only to tools with session='required'")
        if ui is None and visibility is not None:
            raise TypeError(f"tool {tool_name}: visibility applies to a tool with a view (ui='ui://...')")
        view = None if ui is None else ToolUi.of(tool_name, ui, visibility)
        required = tuple(dict.fromkeys(scopes))
        if any(not SCOPE_TOKEN.fullmatch(scope) for scope in required):  # RFC 6749 section 3.3
            raise TypeError(f"tool {tool_name}: scopes must be scope tokens, got {required!r}")
        if explicit_schema is not None:  # the arguments reach the function as the schema admits them
            signature = signature_of(function, skip=(SESSION_HANDLE_ARGUMENT,), untyped=Any)
            schema, check, run = dict(explicit_schema), None, signature.runner()
        else:
            signature = signature_of(function, skip=(SESSION_HANDLE_ARGUMENT,))
            # A session tool's handle is optional in the schema: a 2025-era caller may rely on
            # its transport session, and list results must not vary per connection.
            arguments = json_arguments(signature, _SESSION_HANDLE if session == "required" else None)
            schema, check, run = arguments.schema, arguments.check, signature.runner(arguments.converters)
        # A hand-written output schema is the promise itself: results are converted as given.
        output = None if output_schema is not None else _output(tool_name, signature, structured_output)
        spec = ToolSpec(
            name=tool_name,
            description=feature_description(function, description),
            function=function,
            input_schema=schema,
            run=run,
            to_result=to_result if output is None else structured_result(output),
            output_schema=output.schema if output is not None else output_schema,
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
            check_arguments=check,
            consistency=consistency,
            reads_context=reads_context and declared != APPEND_ONLY,
            ui=view,
        )
        return attach(function, spec)

    return build if function is None else build(function)


def _output(name: str, signature: Signature, structured_output: bool | None) -> Output | None:
    if structured_output is False:
        return None
    try:
        output = output_of(signature, unstructured=(ToolResult,))
    except SchemaError:
        if structured_output:
            raise
        output = None  # as the SDK does: a return type without a JSON form gives unstructured output
    if output is None and structured_output:
        raise SchemaError(f"tool {name}: structured_output needs a return annotation with a JSON form")
    return output


def tool_spec(value: Any) -> ToolSpec:
    """The :class:`ToolSpec` of a function decorated with :func:`tool` (or the spec itself)."""
    spec = value if isinstance(value, ToolSpec) else attached(value)
    if not isinstance(spec, ToolSpec):
        raise TypeError(f"{value!r} is not a tool: decorate it with @tool")
    return spec


def _session_effect(name: str, session: SessionUse, effect: Effect | None, annotations: JSONObject) -> Effect | None:
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

    def __init__(self, tools: Iterable[Any] = ()) -> None:
        self._by_name: dict[str, ToolSpec] = {}
        for found in tools:
            self.add(found)

    def add(self, value: Any) -> None:
        """A tool (the decorated function, or its spec); two tools of one name are refused."""
        spec = tool_spec(value)
        known = self._by_name.get(spec.name)
        if known is not None:
            raise ValueError(
                f"duplicate tool name {spec.name!r}: {defined_at(known.function)} and {defined_at(spec.function)}"
            )
        self._by_name[spec.name] = spec

    def get(self, name: str) -> ToolSpec | None:
        return self._by_name.get(name)

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def listing(self) -> list[JSONObject]:
        return [self._by_name[name].describe() for name in self.names()]


def iter_feature_modules(package: ModuleType) -> list[ModuleType]:
    prefix = package.__name__ + "."
    return [
        importlib.import_module(prefix + info.name)
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name)
        if not info.name.startswith("_")
    ]


def to_result(value: Any) -> JSONObject:
    """A tool's return value as a CallToolResult, when its return annotation implies no output
    schema: a str is text, a dict (or a dataclass, a model) is structured content as well, other
    JSON data is its JSON text; a :class:`ToolResult` is the result itself."""
    if isinstance(value, ToolResult):
        return value.to_result()
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}], "isError": False}
    if isinstance(value, dict):
        text = json.dumps(value, separators=(",", ":"), default=str)
        return {"content": [{"type": "text", "text": text}], "structuredContent": value, "isError": False}
    if value is None:
        return {"content": [], "isError": False}
    from mcp_platform.protocol.conversion import jsonable  # values beyond JSON data: loaded on first use

    try:
        data = jsonable(value)
    except TypeError as exc:
        raise TypeError(f"tool returned {type(value).__name__}, which has no JSON form ({exc})") from None
    if isinstance(data, dict):
        return {"content": [_text(data)], "structuredContent": data, "isError": False}
    return {"content": [_text(data)], "isError": False}


def structured_result(output: Output) -> Callable[[Any], JSONObject]:
    """The result conversion of a tool whose return annotation implies ``output``: the value
    (serialized, checked against the annotation) is the structured content, or its ``result``.
    A :class:`ToolResult` is the result the tool built itself."""
    serialize, check, wrapped = output.serialize, output.check, output.wrapped

    def convert(value: Any) -> JSONObject:
        if isinstance(value, ToolResult):
            if not value.is_error:
                _check_built(value, check, wrapped)
            return value.to_result()
        data = value if serialize is None else serialize(value)
        try:
            check(data, "result")
        except ValueError as exc:
            raise TypeError(f"tool returned what its return annotation excludes: {exc}") from None
        if wrapped:
            if type(data) is str:  # the usual wrapped value: its text is itself
                return {
                    "content": [{"type": "text", "text": data}],
                    "structuredContent": {"result": data},
                    "isError": False,
                }
            return {
                "content": [] if data is None else [_text(data)],
                "structuredContent": {"result": data},
                "isError": False,
            }
        return {"content": [_text(data)], "structuredContent": data, "isError": False}

    return convert


def _check_built(value: ToolResult, check: Check, wrapped: bool) -> None:
    """A result a tool built itself still owes the structured content its output schema
    promises (clients check it against the schema they listed)."""
    structured: Any = value.structured
    if structured is None or (wrapped and "result" not in structured):
        raise TypeError("tool declares an output schema: the ToolResult it returns needs that structured content")
    try:
        check(structured["result"] if wrapped else structured, "structured")
    except ValueError as exc:
        raise TypeError(f"tool returned a ToolResult whose structured content its annotation excludes: {exc}") from None


def _text(data: Any) -> JSONObject:
    """The text block of a result: a string as it is, other JSON data as compact JSON."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"), default=str)
    return {"type": "text", "text": text}


def error_result(message: str) -> JSONObject:
    return {"content": [{"type": "text", "text": message}], "isError": True}
