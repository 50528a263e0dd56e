"""What a feature function's signature implies, worked out once when it is decorated.

* the **context** parameter: the one annotated :class:`ToolContext` (any name), else one named
  ``ctx`` (how tools were written before annotations were read); a function may have none;
* the **arguments**: their JSON Schema, the checks a call's arguments must pass (compiled once)
  and, for types the JSON value is not already of, the conversion the function receives;
* how the platform **calls** it: ``run(ctx, **arguments)`` awaits an ``async def`` directly and
  runs a plain ``def`` in a worker thread (``asyncio.to_thread``), so it never blocks the loop;
* for tools, the **output** its return annotation implies (:func:`output_of`), as the SDK's
  MCPServer derives it: a model, TypedDict, dataclass or ``dict[str, T]`` is the structured
  content itself; any other annotated type is wrapped as ``{"result": value}``.

An ``async def`` whose context comes first and whose arguments need no conversion is called as
it is: the common tool pays nothing per call for any of this. A function declared with plain JSON
types never loads :mod:`.conversion` either (see the end of this module): nor does a cold
start whose features are all declared so.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import sys
import types
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

from mcp_platform.protocol.context import ToolContext, ToolServices
from mcp_platform.protocol.schema import (
    Check,
    SchemaError,
    add_default,
    compile_arguments,
    compile_schema,
    description_of,
    type_schema,
    unwrap,
)

if TYPE_CHECKING:
    from mcp_platform.protocol.conversion import PydanticType

Runner = Callable[..., Awaitable[Any]]
"""``run(ctx, **arguments)``: the feature function called the way the platform calls it."""
LEGACY_CONTEXT_NAME = "ctx"
_EMPTY = inspect.Parameter.empty


class ArgumentError(ValueError):
    """An argument the function's declared type refused when it was converted."""


@dataclass(frozen=True)
class Parameter:
    """One argument of a feature function (the context excluded)."""

    name: str
    annotation: Any
    default: Any = _EMPTY

    @property
    def required(self) -> bool:
        return self.default is _EMPTY

    @property
    def description(self) -> str | None:
        return description_of(unwrap(self.annotation)[1])


@dataclass(frozen=True)
class Signature:
    function: Callable[..., Any]
    context: str | None
    context_first: bool
    """The context is the first positional parameter: passed by position, as ``f(ctx, ...)``."""
    is_async: bool
    parameters: tuple[Parameter, ...]
    returns: Any = _EMPTY

    def runner(self, converters: Mapping[str, Callable[[Any], Any]] | None = None) -> Runner:
        """``run(ctx, **arguments)``; ``converters`` turn named arguments into their declared
        types first (a refusal is an :class:`ArgumentError`)."""
        function, context, by_position, is_async = self.function, self.context, self.context_first, self.is_async
        if is_async and by_position and not converters:
            return function  # called exactly as written: nothing added per call
        conversions = tuple((converters or {}).items())

        async def run(ctx: ToolContext[ToolServices], /, **arguments: Any) -> Any:
            for name, convert in conversions:
                if name in arguments:
                    try:
                        arguments[name] = convert(arguments[name])
                    except (ValueError, TypeError) as exc:
                        raise ArgumentError(f"arguments.{name}: {exc}") from exc
            if is_async:
                if by_position:
                    return await function(ctx, **arguments)
                if context is not None:
                    arguments[context] = ctx
                return await function(**arguments)
            if context is None:
                return await asyncio.to_thread(function, **arguments)
            return await _in_worker_thread(function, ctx, context if not by_position else None, arguments)

        return run


async def _in_worker_thread(
    function: Callable[..., Any], ctx: ToolContext[ToolServices], keyword: str | None, arguments: dict[str, Any]
) -> Any:
    """A sync function in a worker thread, with a context whose effects are adopted only when
    the run ends without being stopped (a cancelled await leaves the thread running)."""
    worker = ctx.for_worker_thread()
    if keyword is None:
        pending = asyncio.to_thread(function, worker, **arguments)
    else:
        pending = asyncio.to_thread(function, **arguments, **{keyword: worker})
    try:
        value = await pending
    except asyncio.CancelledError:
        raise  # stopped (max_seconds, a cancellation): nothing the thread queues is committed
    except BaseException:
        ctx.adopt_effects(worker)  # as an async tool's effects stay queued when it raises
        raise
    ctx.adopt_effects(worker)
    return value


def signature_of(function: Callable[..., Any], skip: tuple[str, ...] = (), untyped: Any = None) -> Signature:
    """The signature of a feature function; ``skip`` names parameters the platform fills or
    leaves out (the session handle); ``untyped`` is the type of a parameter without a hint
    (None: a hint is required). SchemaError for what no caller could fill."""
    hints = _hints(function)
    parameters = list(inspect.signature(function).parameters.values())
    context = _context_parameter(parameters, hints)
    found: list[Parameter] = []
    for parameter in parameters:
        if parameter.name == context or parameter.name in skip:
            continue
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            continue  # never filled: arguments are named
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            if untyped is None:
                raise SchemaError(f"{_name(function)}: **{parameter.name} has no schema; name each argument")
            continue  # takes whatever else a hand-written schema admits
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise SchemaError(f"{_name(function)}: argument {parameter.name!r} is positional-only; arguments are named")
        if parameter.name not in hints and untyped is None:
            raise SchemaError(f"parameter {parameter.name!r} of {_name(function)} needs a type hint")
        found.append(Parameter(parameter.name, hints.get(parameter.name, untyped), parameter.default))
    first = parameters[0] if parameters else None
    context_first = (
        first is not None
        and first.name == context
        and first.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    )
    return Signature(
        function,
        context,
        context_first,
        inspect.iscoroutinefunction(function),
        tuple(found),
        hints.get("return", _EMPTY),
    )


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    try:
        return get_type_hints(function, include_extras=True)
    except NameError as exc:
        raise SchemaError(
            f"cannot resolve the type hints of {_name(function)}: {exc} "
            "(import the types it names at module level, not under TYPE_CHECKING)"
        ) from exc


def _name(function: Callable[..., Any]) -> str:
    return getattr(function, "__qualname__", repr(function))


def _context_parameter(parameters: list[inspect.Parameter], hints: dict[str, Any]) -> str | None:
    for parameter in parameters:
        if parameter.name in hints and _is_context_type(hints[parameter.name]):
            return parameter.name
    if any(parameter.name == LEGACY_CONTEXT_NAME for parameter in parameters):
        return LEGACY_CONTEXT_NAME
    return None


def _is_context_type(annotation: Any) -> bool:
    base, _ = unwrap(annotation)
    if get_origin(base) in (Union, types.UnionType):
        return any(_is_context_type(member) for member in get_args(base))
    base = get_origin(base) or base  # ToolContext[Services], as the facade exports it
    return isinstance(base, type) and issubclass(base, ToolContext)


# -- arguments given as JSON (tools) --------------------------------------------------------------


@dataclass(frozen=True)
class JsonArguments:
    """A tool's input schema, the compiled check of a call's arguments, and the conversions
    the function receives its arguments through."""

    schema: dict[str, Any]
    check: Check
    converters: Mapping[str, Callable[[Any], Any]]


def json_arguments(signature: Signature, platform: Mapping[str, dict[str, Any]] | None = None) -> JsonArguments:
    """``platform``: optional properties the platform itself reads (the session handle)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    definitions: dict[str, Any] = {}
    checked_elsewhere: dict[str, Check] = {}
    converters: dict[str, Callable[[Any], Any]] = {}
    for parameter in signature.parameters:
        if _as_declared(parameter.annotation):  # the JSON value is the argument: nothing to convert
            schema = type_schema(parameter.annotation)
        else:
            from mcp_platform.protocol.conversion import PydanticType, from_json, involves_pydantic

            if involves_pydantic(parameter.annotation):
                described = PydanticType(parameter.annotation)
                schema = described.input_schema()
                _hoist_definitions(schema, definitions, signature.function)
                checked_elsewhere[parameter.name] = _pydantic_check(described)
                converters[parameter.name] = _pydantic_converter(described, f"arguments.{parameter.name}")
            else:
                schema = type_schema(parameter.annotation)
                conversion = from_json(parameter.annotation)
                if conversion is not None:
                    converters[parameter.name] = conversion.convert
                    if conversion.may_refuse:  # refused when admitted, like a type error, not mid-call
                        checked_elsewhere[parameter.name] = _refusing_check(compile_schema(schema), conversion.convert)
        description = parameter.description
        if description and "description" not in schema:
            schema["description"] = description
        if parameter.required:
            required.append(parameter.name)
        else:
            add_default(schema, parameter.default)
        properties[parameter.name] = schema
    properties.update(platform or {})
    result: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        result["required"] = required
    if definitions:
        result["$defs"] = definitions
    return JsonArguments(result, compile_arguments(result, checked_elsewhere), converters)


def input_schema(function: Callable[..., Any], skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The ``inputSchema`` a tool function's arguments imply (the context excluded)."""
    return json_arguments(signature_of(function, skip)).schema


def _hoist_definitions(schema: dict[str, Any], definitions: dict[str, Any], function: Callable[..., Any]) -> None:
    """pydantic names nested models in ``$defs`` of each schema; in a tool's input schema they
    belong at the root, where the ``#/$defs/...`` references point."""
    for name, definition in schema.pop("$defs", {}).items():
        if definitions.setdefault(name, definition) != definition:
            raise SchemaError(f"{_name(function)}: two different types are both named {name!r}; rename one")


def _pydantic_check(described: PydanticType) -> Check:
    def check(value: Any, path: str) -> None:
        described.convert(value, path)

    return check


def _pydantic_converter(described: PydanticType, path: str) -> Callable[[Any], Any]:
    return lambda value: described.convert(value, path)


def _refusing_check(schema_check: Check, convert: Callable[[Any], Any]) -> Check:
    def check(value: Any, path: str) -> None:
        schema_check(value, path)
        try:
            convert(value)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: {exc}") from exc

    return check


# -- arguments given as strings (URI template variables, prompt arguments) ------------------------


def text_arguments(signature: Signature) -> dict[str, Callable[[str], Any]]:
    """Per argument whose declared type is not ``str``, the conversion of its string; each
    raises ValueError naming what it expected."""
    parsers: dict[str, Callable[[str], Any]] = {}
    for parameter in signature.parameters:
        if _given_as_text(parameter.annotation):
            continue  # the string is the argument
        from mcp_platform.protocol.conversion import PydanticType, from_text, involves_pydantic

        if involves_pydantic(parameter.annotation):
            parsers[parameter.name] = _pydantic_text_parser(PydanticType(parameter.annotation), parameter.name)
        else:
            parse = from_text(parameter.annotation)
            if parse is not None:
                parsers[parameter.name] = parse
    return parsers


def _pydantic_text_parser(described: PydanticType, name: str) -> Callable[[str], Any]:
    return lambda text: described.convert_text(text, name)


# -- a tool's output ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Output:
    """The output schema a tool's return annotation implies, and how a returned value becomes
    its structured content."""

    schema: dict[str, Any]
    wrapped: bool
    """The value is the ``result`` property of the structured content (primitives, lists...)."""
    serialize: Callable[[Any], Any] | None
    """The value as JSON data; None when the declared type already is JSON data."""
    check: Check
    """Of the JSON data (the unwrapped value): a tool returning what it did not declare is a defect."""


def output_of(signature: Signature, unstructured: tuple[type, ...]) -> Output | None:
    """None when the return annotation implies no structured output: none, ``Any``, ``object``,
    or one of ``unstructured`` (a full result the tool builds itself)."""
    declared = signature.returns
    base, _ = unwrap(declared)
    if get_origin(base) in (Union, types.UnionType) and any(_is_unstructured(m, unstructured) for m in get_args(base)):
        return None  # sometimes a result the tool builds itself: no schema could hold for every call
    if declared is _EMPTY or base in (Any, object) or _is_unstructured(base, unstructured):
        return None
    wrapped = not _is_object_type(base)
    if _as_declared(declared):  # JSON data as it is: checked against its schema, never serialized
        schema = type_schema(declared)
        return _output(schema, wrapped, None, compile_schema(schema))
    from mcp_platform.protocol.conversion import PydanticType, involves_pydantic, jsonable

    if involves_pydantic(declared):
        described = PydanticType(declared)
        schema = described.output_schema()
        return _output(schema, wrapped, described.dump, _anything)
    schema = type_schema(declared)
    return _output(schema, wrapped, None if _is_json_data(base) else jsonable, compile_schema(schema))


def _is_unstructured(annotation: Any, unstructured: tuple[type, ...]) -> bool:
    base, _ = unwrap(annotation)
    return isinstance(base, type) and issubclass(base, unstructured)


def _output(schema: dict[str, Any], wrapped: bool, serialize: Callable[[Any], Any] | None, check: Check) -> Output:
    if wrapped:
        definitions = schema.pop("$defs", None)
        schema = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        if definitions:
            schema["$defs"] = definitions
    else:
        schema = _inline_root_reference(schema)
    return Output(schema, wrapped, serialize, check)


def _anything(value: Any, path: str) -> None:
    return None  # pydantic validated it while serializing


def _inline_root_reference(schema: dict[str, Any]) -> dict[str, Any]:
    """An output schema's root must be an object, not a ``$ref`` (pydantic's spelling of a
    recursive model): the referenced definition is copied to the root, ``$defs`` kept."""
    reference = schema.get("$ref")
    if not isinstance(reference, str) or not reference.startswith("#/$defs/"):
        return schema
    definition = schema["$defs"][reference.removeprefix("#/$defs/")]
    return {**definition, **{key: value for key, value in schema.items() if key != "$ref"}}


def _is_object_type(base: Any) -> bool:
    """Types whose JSON form is an object: structured content as they are, never wrapped."""
    origin = get_origin(base)
    if origin in (dict, Mapping) or base in (dict, Mapping):
        return True
    if not isinstance(base, type):
        return False
    if is_typeddict(base) or dataclasses.is_dataclass(base):
        return True
    if not _pydantic_loaded():
        return False
    from mcp_platform.protocol.conversion import pydantic_base_model

    model = pydantic_base_model()
    return model is not None and issubclass(base, model)


def _is_json_data(base: Any) -> bool:
    """Whether a value of this declared type is JSON data as it is (no serializing walk)."""
    base, _ = unwrap(base)
    origin = get_origin(base)
    if base in (str, int, float, bool, type(None), None, Any, object) or origin is Literal:
        return True
    if origin in (Union, types.UnionType):
        return all(_is_json_data(member) for member in get_args(base))
    if origin is list or origin is dict or base in (list, dict):
        return all(_is_json_data(arg) for arg in get_args(base))
    return False


# -- types that need no conversion ----------------------------------------------------------------
# protocol.conversion (and what it imports) is loaded for the first type that needs it: features
# declared with plain JSON types, as the endpoint's own are, are decorated and called without it,
# which keeps it out of a cold start. What follows must agree with protocol.conversion: for a type it
# accepts, from_json (or from_text) finds no conversion and involves_pydantic is False (the test
# test_a_type_is_described_alike_whether_or_not_its_path_loads_the_conversions derives both ways).


def _pydantic_loaded() -> bool:
    """Some module imported pydantic: only then can a type be a model or carry ``Field`` metadata."""
    return "pydantic" in sys.modules


def _as_declared(annotation: Any) -> bool:
    """Whether a JSON value of this declared type is what the function receives, unconverted
    (str, int, float, bool, None, Literal, and lists, dicts and unions of them)."""
    return not _pydantic_loaded() and _is_json_data(annotation)


def _given_as_text(annotation: Any) -> bool:
    """Whether a string argument (URI template variable, prompt argument) is passed as it is:
    declared ``str`` (``Any``, ``object``), optionally ``| None``."""
    if _pydantic_loaded():
        return False
    base, _ = unwrap(annotation)
    if get_origin(base) in (Union, types.UnionType):
        members = [member for member in get_args(base) if member is not type(None)]
        return len(members) == 1 and _given_as_text(members[0])
    return base in (str, Any, object)
