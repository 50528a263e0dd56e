"""JSON Schema from a tool function's type hints, and validation of call arguments.

Only the subset tools need: str, int, float, bool, None, Literal, list[T], dict[str, T],
optional (``T | None``) and ``Annotated[T, "description"]``. Validation covers exactly the
schemas this module generates, so a tool never sees an argument of the wrong type.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

_PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


class SchemaError(TypeError):
    """A tool signature uses a type this module cannot describe."""


def type_schema(annotation: Any) -> dict[str, Any]:
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *extras = get_args(annotation)
        schema = type_schema(base)
        descriptions = [extra for extra in extras if isinstance(extra, str)]
        if descriptions:
            schema["description"] = descriptions[0]
        return schema
    if annotation in _PRIMITIVES:
        return {"type": _PRIMITIVES[annotation]}
    if annotation is type(None):
        return {"type": "null"}
    if origin is Literal:
        values = list(get_args(annotation))
        return {"enum": values}
    if origin in (Union, types.UnionType):
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(members) == 1:
            return type_schema(members[0])
        return {"anyOf": [type_schema(member) for member in members]}
    if origin is list:
        (item,) = get_args(annotation) or (Any,)
        return {"type": "array", "items": type_schema(item)} if item is not Any else {"type": "array"}
    if origin is dict or annotation is dict:
        args = get_args(annotation)
        mapping: dict[str, Any] = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            mapping["additionalProperties"] = type_schema(args[1])
        return mapping
    if annotation is Any:
        return {}
    raise SchemaError(f"cannot describe type {annotation!r} in a tool schema")


def input_schema(func: Callable[..., Any], skip: tuple[str, ...] = ("ctx",)) -> dict[str, Any]:
    """The tool's ``inputSchema``: one property per parameter except the context."""
    hints = get_type_hints(func, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in inspect.signature(func).parameters.items():
        if name in skip:
            continue
        if name not in hints:
            raise SchemaError(f"parameter {name!r} of {func.__name__} needs a type hint")
        schema = type_schema(hints[name])
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
        elif parameter.default is not None:
            schema["default"] = parameter.default
        properties[name] = schema
    result: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        result["required"] = required
    return result


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def validate(value: Any, schema: dict[str, Any], path: str = "arguments") -> None:
    """Raise ``ValueError`` naming the first offending path (a tool validates through its
    schema compiled once, :func:`compile_schema`)."""
    compile_schema(schema)(value, path)


Check = Callable[[Any, str], None]


def compile_schema(schema: dict[str, Any]) -> Check:
    """The checks of one schema, built once: ``compile_schema(s)(value, path)`` raises a
    ``ValueError`` naming the first offending path, without reading the schema again on every
    call (a tool's schema lives as long as its spec). Order: ``enum``, then ``anyOf`` (the first
    option that passes wins), then ``type`` with its ``items`` or object properties."""
    checks: list[Check] = []
    if "enum" in schema:
        checks.append(_enum_check(schema["enum"]))
    if "anyOf" in schema:
        return _all_of([*checks, _any_of_check([compile_schema(option) for option in schema["anyOf"]])])
    expected = schema.get("type")
    if expected == "object":
        checks.append(_object_check(schema))  # its type test included: one call per object
    elif expected is not None:
        checks.append(_type_check(expected, _TYPE_CHECKS[expected]))
        if expected == "array" and "items" in schema:
            checks.append(_items_check(compile_schema(schema["items"])))
    return _all_of(checks)


def _all_of(checks: list[Check]) -> Check:
    if not checks:
        return _anything
    if len(checks) == 1:
        return checks[0]

    def check(value: Any, path: str) -> None:
        for step in checks:
            step(value, path)

    return check


def _anything(value: Any, path: str) -> None:
    return None


def _enum_check(allowed: list[Any]) -> Check:
    def check(value: Any, path: str) -> None:
        if value not in allowed:
            raise ValueError(f"{path} must be one of {allowed}")

    return check


def _any_of_check(options: list[Check]) -> Check:
    def check(value: Any, path: str) -> None:
        for option in options:
            try:
                option(value, path)
                return
            except ValueError:
                continue
        raise ValueError(f"{path} matches none of the allowed types")

    return check


def _type_check(expected: str, accepts: Callable[[Any], bool]) -> Check:
    if expected == "string":  # the common case, without the table's lambda

        def check_string(value: Any, path: str) -> None:
            if not isinstance(value, str):
                raise ValueError(f"{path} must be of type string")

        return check_string

    def check(value: Any, path: str) -> None:
        if not accepts(value):
            raise ValueError(f"{path} must be of type {expected}")

    return check


def _items_check(item: Check) -> Check:
    def check(value: Any, path: str) -> None:
        for index, element in enumerate(value):
            item(element, f"{path}[{index}]")

    return check


def _object_check(schema: dict[str, Any]) -> Check:
    properties = {name: compile_schema(sub) for name, sub in schema.get("properties", {}).items()}
    required = tuple(schema.get("required", []))
    extra = schema.get("additionalProperties", True)
    extra_check = compile_schema(extra) if isinstance(extra, dict) else None
    closed = extra is False

    def check(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise ValueError(f"{path} must be of type object")
        for name in required:
            if name not in value:
                raise ValueError(f"{path}.{name} is required")
        for name, item in value.items():
            known = properties.get(name)
            if known is not None:
                known(item, f"{path}.{name}")
            elif closed:
                raise ValueError(f"{path}.{name} is not an accepted argument")
            elif extra_check is not None:
                extra_check(item, f"{path}.{name}")

    return check


# One compiled validator per schema object (a tool's schema lives as long as its spec).
_VALIDATORS: dict[int, Any] = {}


def validate_2020_12(value: Any, schema: dict[str, Any]) -> None:
    """Full JSON Schema 2020-12 validation for hand-written schemas (``$defs``, ``$ref``,
    ``if``/``then``/``else``...). Imported on first use: derived schemas never need it."""
    validator = _VALIDATORS.get(id(schema))
    if validator is None:
        from jsonschema import Draft202012Validator

        Draft202012Validator.check_schema(schema)
        validator = _VALIDATORS[id(schema)] = Draft202012Validator(schema)
    error = next(iter(validator.iter_errors(value)), None)
    if error is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise ValueError(f"arguments{where}: {error.message}")
