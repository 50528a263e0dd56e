"""Values between the wire and a feature function: arguments into the declared types, return
values back into JSON.

Everything here is worked out once per function, at decoration: a parameter gets a converter only
when its JSON value is not already of the declared type (an Enum, a dataclass, a tuple, a
datetime...), so a call of a function with plain types converts nothing. :mod:`.signature`
loads this module for the first function that declares such a type, not before.

pydantic is never imported here: a type that involves pydantic (a model, ``Field`` metadata) can
only exist once the feature module has imported pydantic, so it is recognised through
``sys.modules`` and described, validated and converted by pydantic itself (:class:`PydanticType`).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import sys
import types
import uuid
from collections.abc import Callable, Mapping, MutableSequence, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin, is_typeddict

from mcp_platform.protocol.schema import SchemaError, class_hints, compile_schema, type_schema, unwrap

Convert = Callable[[Any], Any]
_PARSERS: dict[Any, Convert] = {
    datetime.datetime: datetime.datetime.fromisoformat,
    datetime.date: datetime.date.fromisoformat,
    datetime.time: datetime.time.fromisoformat,
    uuid.UUID: uuid.UUID,
}
_SEQUENCES = (list, Sequence, MutableSequence)
_TRUE, _FALSE = frozenset({"true", "1", "yes", "on"}), frozenset({"false", "0", "no", "off"})


@dataclass(frozen=True)
class Conversion:
    """How one declared type is reached from its JSON value."""

    convert: Convert
    may_refuse: bool = False
    """The conversion can refuse a value the schema accepts (a datetime string that does not
    parse, a dataclass whose ``__post_init__`` raises): it runs when arguments are admitted too."""


def from_json(annotation: Any) -> Conversion | None:
    """The conversion of a JSON value (already checked against ``type_schema(annotation)``)
    into ``annotation``; None when the JSON value already is one."""
    base, _ = unwrap(annotation)
    origin = get_origin(base)
    if origin in (Union, types.UnionType):
        return _union(get_args(base))
    if origin is Literal or base in (Any, object, str, int, float, bool, type(None), None):
        return None
    if origin in _SEQUENCES or base in _SEQUENCES:
        return _each(get_args(base), list)
    if origin in (set, frozenset) or base in (set, frozenset):
        return _each(get_args(base), origin or base, always=True)
    if origin is tuple or base is tuple:
        return _tuple(get_args(base))
    if origin in (dict, Mapping) or base in (dict, Mapping):
        args = get_args(base)
        value = from_json(args[1]) if len(args) == 2 else None
        if value is None:
            return None
        convert = value.convert
        return Conversion(lambda v: {key: convert(item) for key, item in v.items()}, value.may_refuse)
    if base in _PARSERS:
        return Conversion(_PARSERS[base], may_refuse=True)
    if isinstance(base, type):
        if issubclass(base, enum.Enum):
            return Conversion(base)  # the schema's enum check admits only its values
        if is_typeddict(base):
            return _typeddict(base)
        if dataclasses.is_dataclass(base):
            return _dataclass(base)
    return None


def _union(members: tuple[Any, ...]) -> Conversion | None:
    """The first member whose schema admits the value converts it (the order of ``anyOf``)."""
    options = [(member, from_json(member)) for member in members if member is not type(None)]
    if all(conversion is None for _, conversion in options):
        return None
    if len(options) == 1:
        only = options[0][1]
        assert only is not None
        convert_only = only.convert
        return Conversion(lambda v: None if v is None else convert_only(v), only.may_refuse)
    checked = [(compile_schema(type_schema(member)), conversion) for member, conversion in options]

    def convert(value: Any) -> Any:
        if value is None:
            return None
        for check, conversion in checked:
            try:
                check(value, "value")
            except ValueError:
                continue
            return value if conversion is None else conversion.convert(value)
        return value

    return Conversion(convert, any(c is not None and c.may_refuse for _, c in options))


def _each(args: tuple[Any, ...], container: Any, always: bool = False) -> Conversion | None:
    item = from_json(args[0]) if args else None
    if item is None:
        return Conversion(container) if always else None
    convert = item.convert
    return Conversion(lambda v: container(convert(element) for element in v), item.may_refuse)


def _tuple(args: tuple[Any, ...]) -> Conversion:
    if not args or (len(args) == 2 and args[1] is Ellipsis) or args == ((),):
        item = from_json(args[0]) if args and args != ((),) else None
        if item is None:
            return Conversion(tuple)
        convert = item.convert
        return Conversion(lambda v: tuple(convert(element) for element in v), item.may_refuse)
    parts = [from_json(arg) for arg in args]
    converts = [part.convert if part is not None else None for part in parts]
    return Conversion(
        lambda v: tuple(element if c is None else c(element) for element, c in zip(v, converts, strict=True)),
        any(part is not None and part.may_refuse for part in parts),
    )


def _typeddict(cls: type) -> Conversion:
    """A TypedDict holds its declared keys (others are dropped, as pydantic does), converted."""
    fields = {name: from_json(hint) for name, hint in class_hints(cls).items()}

    def convert(value: dict[str, Any]) -> dict[str, Any]:
        return {
            name: item if (field := fields[name]) is None else field.convert(item)
            for name, item in value.items()
            if name in fields
        }

    return Conversion(convert, any(field is not None and field.may_refuse for field in fields.values()))


def _dataclass(cls: type) -> Conversion:
    hints = class_hints(cls)
    fields = {field.name: from_json(hints[field.name]) for field in dataclasses.fields(cls) if field.init}

    def convert(value: dict[str, Any]) -> Any:
        return cls(
            **{
                name: item if (field := fields[name]) is None else field.convert(item)
                for name, item in value.items()
                if name in fields
            }
        )

    return Conversion(convert, may_refuse=True)  # __post_init__ may refuse what the schema admits


def from_text(annotation: Any) -> Convert | None:
    """The conversion of a string (a URI template variable, a prompt argument: the wire gives
    only strings) into ``annotation``, raising ValueError with a readable reason; None for str."""
    base, _ = unwrap(annotation)
    origin = get_origin(base)
    if origin in (Union, types.UnionType):
        members = [member for member in get_args(base) if member is not type(None)]
        return from_text(members[0]) if len(members) == 1 else _first_text(members)
    if base in (str, Any, object):
        return None
    if base is bool:
        return _boolean
    if base in (int, float):
        return _number(base)
    if base in _PARSERS:
        return _PARSERS[base]
    if origin is Literal:
        return _choice({str(value): value for value in get_args(base)})
    if isinstance(base, type) and issubclass(base, enum.Enum):
        return _choice({str(member.value): member for member in base})
    check, conversion = compile_schema(type_schema(base)), from_json(base)  # structured: given as JSON

    def parse(text: str) -> Any:
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{text!r} is not JSON") from exc
        check(value, "value")
        return value if conversion is None else conversion.convert(value)

    return parse


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE or lowered in _FALSE:
        return lowered in _TRUE
    raise ValueError(f"{text!r} is not a boolean (true or false)")


def _number(kind: type) -> Convert:
    def parse(text: str) -> Any:
        try:
            return kind(text)
        except ValueError:
            raise ValueError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None

    return parse


def _choice(allowed: dict[str, Any]) -> Convert:
    def parse(text: str) -> Any:
        if text not in allowed:
            raise ValueError(f"{text!r} is not one of {sorted(allowed)}")
        return allowed[text]

    return parse


def _first_text(members: list[Any]) -> Convert:
    parsers = [from_text(member) or (lambda text: text) for member in members]

    def parse(text: str) -> Any:
        for parser in parsers:
            try:
                return parser(text)
            except ValueError:
                continue
        raise ValueError(f"{text!r} matches none of the allowed types")

    return parse


def jsonable(value: Any) -> Any:
    """A return value as JSON data: dataclasses, TypedDicts, Enums, tuples, sets, datetimes,
    UUIDs and pydantic models become what their JSON spelling is; TypeError for anything else."""
    if value is None or isinstance(value, str | bool | int | float):
        return value.value if isinstance(value, enum.Enum) else value
    if isinstance(value, dict):
        return {key if isinstance(key, str) else str(jsonable(key)): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(item) for item in value]
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: jsonable(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    model = pydantic_base_model()
    if model is not None and isinstance(value, model):
        dumped: Any = value
        return dumped.model_dump(mode="json", by_alias=True)
    raise TypeError(f"{type(value).__name__} has no JSON form")


# -- pydantic, when the feature module brought it -----------------------------------------------


def pydantic_base_model() -> type | None:
    """pydantic's BaseModel when some module imported pydantic, else None (never imports it)."""
    main = sys.modules.get("pydantic.main")
    return getattr(main, "BaseModel", None) if main is not None else None


def involves_pydantic(annotation: Any) -> bool:
    """Whether ``annotation`` names a pydantic model or carries ``Field`` metadata anywhere
    (inside containers, unions, dataclass and TypedDict fields). Never imports pydantic."""
    model = pydantic_base_model()
    if model is None:
        return False
    fields = sys.modules.get("pydantic.fields")
    field_info = getattr(fields, "FieldInfo", None) if fields is not None else None
    return _involves(annotation, model, field_info, set())


def _involves(annotation: Any, model: type, field_info: type | None, seen: set[int]) -> bool:
    if id(annotation) in seen:
        return False
    seen.add(id(annotation))
    base, metadata = unwrap(annotation)
    if field_info is not None and any(isinstance(extra, field_info) for extra in metadata):
        return True
    if isinstance(base, type):
        if issubclass(base, model):
            return True
        if is_typeddict(base) or dataclasses.is_dataclass(base):
            return any(_involves(hint, model, field_info, seen) for hint in class_hints(base).values())
        return False
    return any(_involves(arg, model, field_info, seen) for arg in get_args(base) if arg is not Ellipsis)


class PydanticType:
    """One annotation described, validated and converted by pydantic (lenient where pydantic is:
    the SDK's behaviour for such types). Built once per parameter or return type."""

    def __init__(self, annotation: Any) -> None:
        from pydantic import TypeAdapter  # already imported by the feature module: free

        self._adapter: Any = TypeAdapter(annotation)

    def input_schema(self) -> dict[str, Any]:
        return self._schema("validation")

    def output_schema(self) -> dict[str, Any]:
        return self._schema("serialization")

    def _schema(self, mode: Literal["validation", "serialization"]) -> dict[str, Any]:
        try:
            schema: dict[str, Any] = self._adapter.json_schema(mode=mode)
        except Exception as exc:  # pydantic's own error types: one reason, said once
            raise SchemaError(f"pydantic cannot describe this type: {exc}") from exc
        return schema

    def convert(self, value: Any, path: str) -> Any:
        """The validated value, or ValueError naming each offending field below ``path``."""
        from pydantic import ValidationError

        try:
            return self._adapter.validate_python(value)
        except ValidationError as exc:
            raise ValueError(_validation_message(exc, path)) from None

    def convert_text(self, text: str, path: str) -> Any:
        """From a string: scalars leniently (``"5"`` for an int), structures as JSON."""
        from pydantic import ValidationError

        try:
            return self._adapter.validate_python(text)
        except ValidationError as exc:
            if not text.lstrip().startswith(("{", "[")):
                raise ValueError(_validation_message(exc, path)) from None
        try:
            return self._adapter.validate_json(text)
        except ValidationError as exc:
            raise ValueError(_validation_message(exc, path)) from None

    def dump(self, value: Any) -> Any:
        """A return value as JSON data, validated against the declared type first (a dict where a
        model is declared becomes the model), TypeError when it is not one."""
        from pydantic import BaseModel, ValidationError

        try:
            validated = self._adapter.validate_python(value, by_alias=True, by_name=True)
        except ValidationError as exc:
            raise TypeError(_validation_message(exc, "result")) from None
        if isinstance(validated, BaseModel):  # dumped through the instance: a subclass keeps its fields
            return validated.model_dump(mode="json", by_alias=True)
        return self._adapter.dump_python(validated, mode="json", by_alias=True)


def _validation_message(exc: Any, path: str, most: int = 3) -> str:
    errors = exc.errors(include_url=False)
    said = [
        f"{path}{''.join(f'[{part}]' if isinstance(part, int) else f'.{part}' for part in error['loc'])}: "
        f"{error['msg']}"
        for error in errors[:most]
    ]
    more = f" (and {len(errors) - most} more)" if len(errors) > most else ""
    return "; ".join(said) + more
