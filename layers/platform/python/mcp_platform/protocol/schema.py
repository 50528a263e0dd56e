"""JSON Schema from type hints, and validation of call arguments against it.

The types a feature function may declare without pydantic: str, int, float, bool, None, Any,
Literal, Enum, list/Sequence[T], tuple (fixed or ``tuple[T, ...]``), set[T], dict/Mapping[str, T],
unions and ``T | None``, TypedDict, dataclasses, datetime/date/time/UUID (strings with a format)
and ``Annotated[T, "description"]``. pydantic models and ``Field`` metadata are described by
pydantic itself (:mod:`protocol.conversion`). Validation covers exactly the schemas this module
generates, so a tool never sees an argument of the wrong type.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import types
import typing
import uuid
from collections.abc import Callable, Iterator, Mapping, MutableSequence, Sequence
from contextlib import contextmanager
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

_PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_FORMATS: dict[Any, str] = {
    datetime.datetime: "date-time",
    datetime.date: "date",
    datetime.time: "time",
    uuid.UUID: "uuid",
}
_SEQUENCES = (list, Sequence, MutableSequence)
_SETS = (set, frozenset)
_MAPPINGS = (dict, Mapping)
# TypedDict key qualifiers: the key's type is their argument (ReadOnly exists from 3.13).
_QUALIFIERS = tuple(q for q in (typing.Required, typing.NotRequired, getattr(typing, "ReadOnly", None)) if q)
# Classes being described, innermost last: a class met again inside itself is recursive.
_DESCRIBING: list[type] = []


class SchemaError(TypeError):
    """A function signature uses a type this module cannot describe."""


def unwrap(annotation: Any) -> tuple[Any, tuple[Any, ...]]:
    """``(type, metadata)`` of an annotation: ``Annotated`` and TypedDict qualifiers removed."""
    metadata: tuple[Any, ...] = ()
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation, *extras = get_args(annotation)
            metadata = (*metadata, *extras)
        elif origin in _QUALIFIERS:
            annotation = get_args(annotation)[0]
        else:
            return annotation, metadata


def description_of(metadata: tuple[Any, ...]) -> str | None:
    """A description in ``Annotated`` metadata: a plain string (the SDK's spelling), or the
    ``description`` of a pydantic ``Field``."""
    for extra in metadata:
        if isinstance(extra, str):
            return extra
        described = getattr(extra, "description", None)
        if isinstance(described, str) and not isinstance(extra, type):
            return described
    return None


def type_schema(annotation: Any) -> dict[str, Any]:
    base, metadata = unwrap(annotation)
    schema = _base_schema(base)
    description = description_of(metadata)
    if description:
        schema["description"] = description
    return schema


def _base_schema(annotation: Any) -> dict[str, Any]:
    origin = get_origin(annotation)
    if annotation in _PRIMITIVES:
        return {"type": _PRIMITIVES[annotation]}
    if annotation in _FORMATS:
        return {"type": "string", "format": _FORMATS[annotation]}
    if annotation is type(None) or annotation is None:
        return {"type": "null"}
    if annotation is Any or annotation is object:
        return {}
    if origin is Literal:
        return {"enum": list(get_args(annotation))}
    if origin in (Union, types.UnionType):
        # ``X | None`` admits null, as the SDK's schemas say: an optional argument may be sent
        # as null, and a result field may be None.
        return {"anyOf": [type_schema(member) for member in get_args(annotation)]}
    if origin in _SEQUENCES or annotation in _SEQUENCES:
        return _array(get_args(annotation))
    if origin in _SETS or annotation in _SETS:
        return {**_array(get_args(annotation)), "uniqueItems": True}
    if origin is tuple or annotation is tuple:
        return _tuple(get_args(annotation))
    if origin in _MAPPINGS or annotation in _MAPPINGS:
        args = get_args(annotation)
        mapping: dict[str, Any] = {"type": "object"}
        if len(args) == 2 and args[1] not in (Any, object):
            mapping["additionalProperties"] = type_schema(args[1])
        return mapping
    if isinstance(annotation, type):
        if issubclass(annotation, enum.Enum):
            return _enum(annotation)
        if is_typeddict(annotation) or dataclasses.is_dataclass(annotation):
            with _describing(annotation):
                return _typeddict(annotation) if is_typeddict(annotation) else _dataclass(annotation)
    raise SchemaError(f"cannot describe type {annotation!r} in a schema")


def _array(args: tuple[Any, ...]) -> dict[str, Any]:
    item = args[0] if args else Any
    return {"type": "array", "items": type_schema(item)} if item not in (Any, object) else {"type": "array"}


def _tuple(args: tuple[Any, ...]) -> dict[str, Any]:
    if not args or (len(args) == 2 and args[1] is Ellipsis):
        return _array(args[:1])
    if args == ((),):  # tuple[()]: the empty tuple
        return {"type": "array", "maxItems": 0}
    prefix = [type_schema(arg) for arg in args]
    return {"type": "array", "prefixItems": prefix, "minItems": len(prefix), "maxItems": len(prefix)}


def _enum(cls: type[enum.Enum]) -> dict[str, Any]:
    values = [member.value for member in cls]
    kinds = {_PRIMITIVES.get(type(value)) for value in values}
    schema: dict[str, Any] = {"enum": values}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    return schema


def _typeddict(cls: type) -> dict[str, Any]:
    hints = class_hints(cls)
    properties = {name: type_schema(hint) for name, hint in hints.items()}
    return _object(properties, [name for name, hint in hints.items() if _required_key(cls, hint)])


def _required_key(cls: type, hint: Any) -> bool:
    """Read from the hint: under ``from __future__ import annotations`` the class's own
    ``__required_keys__`` cannot see a ``NotRequired`` written as a string."""
    while True:
        origin = get_origin(hint)
        if origin is typing.Required:
            return True
        if origin is typing.NotRequired:
            return False
        if origin not in (Annotated, *_QUALIFIERS):
            return bool(getattr(cls, "__total__", True))
        hint = get_args(hint)[0]


def _dataclass(cls: type) -> dict[str, Any]:
    hints = class_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        schema = type_schema(hints[field.name])
        if field.default is not dataclasses.MISSING:
            add_default(schema, field.default)
        elif field.default_factory is dataclasses.MISSING:
            required.append(field.name)
        properties[field.name] = schema
    return _object(properties, required)


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def class_hints(cls: type) -> dict[str, Any]:
    try:
        return get_type_hints(cls, include_extras=True)
    except NameError as exc:
        raise SchemaError(f"cannot resolve the type hints of {cls.__qualname__}: {exc}") from exc


@contextmanager
def _describing(cls: type) -> Iterator[None]:
    if cls in _DESCRIBING:
        raise SchemaError(f"{cls.__qualname__} refers to itself: describe a recursive type with a pydantic model")
    _DESCRIBING.append(cls)
    try:
        yield
    finally:
        _DESCRIBING.pop()


def add_default(schema: dict[str, Any], default: Any) -> None:
    """A parameter's or field's default in its schema, when it has a JSON spelling (an Enum
    member as its value); None, the usual "not given", is left out."""
    if isinstance(default, enum.Enum):
        default = default.value
    if default is None or not _is_json(default):
        return
    schema["default"] = default


def _is_json(value: Any) -> bool:
    if isinstance(value, str | int | float | bool) or value is None:
        return True
    if isinstance(value, list | tuple):
        return all(_is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_json(item) for key, item in value.items())
    return False


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
        options = schema["anyOf"]
        others = [option for option in options if option.get("type") != "null"]
        if len(others) == 1 and len(options) == 2:  # ``X | None``: X's own check names the path
            return _all_of([*checks, _or_null(compile_schema(others[0]))])
        return _all_of([*checks, _any_of_check([compile_schema(option) for option in options])])
    expected = schema.get("type")
    if expected == "object":
        checks.append(_object_check(schema))  # its type test included: one call per object
    elif expected is not None:
        checks.append(_type_check(expected, _TYPE_CHECKS[expected]))
        if expected == "array":
            checks.extend(_array_checks(schema))
    return _all_of(checks)


def compile_arguments(schema: dict[str, Any], checked_elsewhere: Mapping[str, Check]) -> Check:
    """The checks of a function's arguments object, where the properties named in
    ``checked_elsewhere`` are checked by their own function (a pydantic-described argument:
    pydantic validates it, leniently where it is lenient) instead of from their schema."""
    return _object_check(schema, checked_elsewhere)


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


def _or_null(inner: Check) -> Check:
    def check(value: Any, path: str) -> None:
        if value is not None:
            inner(value, path)

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


def _array_checks(schema: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    if "minItems" in schema or "maxItems" in schema:
        checks.append(_length_check(schema.get("minItems", 0), schema.get("maxItems")))
    if "prefixItems" in schema:
        checks.append(_prefix_check([compile_schema(item) for item in schema["prefixItems"]]))
    if "items" in schema:
        checks.append(_items_check(compile_schema(schema["items"])))
    return checks


def _length_check(least: int, most: int | None) -> Check:
    def check(value: Any, path: str) -> None:
        if len(value) < least or (most is not None and len(value) > most):
            wanted = f"exactly {least}" if least == most else f"{least} to {most}" if most is not None else f"{least}+"
            raise ValueError(f"{path} must hold {wanted} items")

    return check


def _prefix_check(items: list[Check]) -> Check:
    def check(value: Any, path: str) -> None:
        for index, (element, item) in enumerate(zip(value, items, strict=False)):
            item(element, f"{path}[{index}]")

    return check


def _items_check(item: Check) -> Check:
    def check(value: Any, path: str) -> None:
        for index, element in enumerate(value):
            item(element, f"{path}[{index}]")

    return check


def _object_check(schema: dict[str, Any], checked_elsewhere: Mapping[str, Check] | None = None) -> Check:
    own = checked_elsewhere or {}
    properties = {
        name: own[name] if name in own else compile_schema(sub) for name, sub in schema.get("properties", {}).items()
    }
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
