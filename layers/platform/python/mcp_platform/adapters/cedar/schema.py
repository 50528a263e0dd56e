"""The Cedar schema of a catalog, and each tool's arguments as Cedar values.

The mapping follows ``cedar-policy-mcp-schema-generator`` (Cedar's own generator for MCP tool
descriptions): every tool is an action, member of the action group ``call_tool``, whose context
carries the tool's arguments typed from its input schema. Resources and prompts add one action
each, ``read_resource`` and ``get_prompt``. Entities, all in the empty namespace:

* ``User`` (the principal, member of ``Group``s): ``subject`` (the principal id), ``kind``
  (``api_key``, ``oauth`` or ``anonymous``), ``scopes`` (the token's; empty for API keys),
  optional ``tenant`` and ``clientId``;
* ``Tool`` (the resource of a tool's action): ``name``, ``readOnly``, ``destructive`` (its
  annotations, with MCP's defaults);
* ``Resource``: ``uri`` (a fixed resource's URI, a read URI, or a template's URI template);
* ``Prompt``: ``name``.

Argument types: string -> String, integer -> Long, number -> decimal, boolean -> Boolean, an array
-> Set, an object with properties -> a record; ``X | None`` is an optional attribute, as is an
argument with a default. An argument whose type Cedar cannot express (a tuple, a map, ``Any``) is
left out of the context: a policy naming it fails validation.

Nothing here imports the engine: the schema is plain data (Cedar's JSON schema format).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from mcp_platform.protocol.access import CALL_TOOL, GET_PROMPT, READ_RESOURCE
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.tools import ToolSpec
from mcp_platform.protocol.versions import SESSION_HANDLE_ARGUMENT

USER = "User"
GROUP = "Group"
TOOL = "Tool"
RESOURCE = "Resource"
PROMPT = "Prompt"
ARGUMENTS = "arguments"
PLATFORM_ACTIONS = (CALL_TOOL, READ_RESOURCE, GET_PROMPT)
LONG_RANGE = (-(2**63), 2**63 - 1)
DECIMAL_PLACES = Decimal("0.0001")  # Cedar's decimal: four digits after the point
DECIMAL_LIMIT = Decimal("922337203685477.5807")

CedarType = dict[str, Any]
Convert = Callable[[Any, str], Any]
"""(an argument's JSON value, its path) -> its Cedar JSON value, or :class:`Unrepresentable`."""


class Unrepresentable(ValueError):
    """An argument value Cedar cannot hold exactly (a number with more than four decimals, an integer
    outside 64 bits): the call is refused rather than decided on a rounded value."""


class CatalogNames(ValueError):
    """A catalog whose names cannot be Cedar actions (a tool named like a platform action)."""


@dataclass(frozen=True)
class _Typed:
    cedar: CedarType
    convert: Convert
    optional: bool = False


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise Unrepresentable(f"{path}: expected a string")
    return value


def _long(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Unrepresentable(f"{path}: expected an integer")
    if not LONG_RANGE[0] <= value <= LONG_RANGE[1]:
        raise Unrepresentable(f"{path}: {value} is outside Cedar's 64-bit integers")
    return value


def _decimal(value: Any, path: str) -> dict[str, Any]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Unrepresentable(f"{path}: expected a number")
    try:
        exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        fixed = exact.quantize(DECIMAL_PLACES)
    except InvalidOperation as exc:
        raise Unrepresentable(f"{path}: {value!r} is not a finite number") from exc
    if fixed != exact or abs(fixed) > DECIMAL_LIMIT:
        raise Unrepresentable(f"{path}: {value!r} does not fit Cedar's decimal (4 decimal places, 64 bits)")
    return {"__extn": {"fn": "decimal", "arg": str(fixed)}}


def _boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise Unrepresentable(f"{path}: expected a boolean")
    return value


_PRIMITIVES: dict[str, tuple[CedarType, Convert]] = {
    "string": ({"type": "String"}, _string),
    "integer": ({"type": "Long"}, _long),
    "number": ({"type": "Extension", "name": "decimal"}, _decimal),
    "boolean": ({"type": "Boolean"}, _boolean),
}


def _typed(schema: Mapping[str, Any]) -> _Typed | None:
    """The Cedar type of one JSON Schema (as :mod:`mcp_platform.protocol.schema` writes them), or
    None when Cedar cannot express it."""
    if "anyOf" in schema:
        options = [option for option in schema["anyOf"] if option.get("type") != "null"]
        inner = _typed(options[0]) if len(options) == 1 else None
        return _Typed(inner.cedar, inner.convert, optional=True) if inner is not None else None
    if "enum" in schema:
        values = schema["enum"]
        kinds = {type(value) for value in values}
        if kinds == {str}:
            return _Typed({"type": "String"}, _string)
        if kinds == {int}:
            return _Typed({"type": "Long"}, _long)
        return None
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _PRIMITIVES:
        cedar, convert = _PRIMITIVES[kind]
        return _Typed(cedar, convert)
    if kind == "array" and "prefixItems" not in schema and isinstance(schema.get("items"), dict):
        item = _typed(schema["items"])
        if item is None or item.optional:
            return None
        return _Typed({"type": "Set", "element": item.cedar}, _set_of(item.convert))
    if kind == "object" and isinstance(schema.get("properties"), dict) and "additionalProperties" not in schema:
        return _record(schema["properties"], frozenset(schema.get("required", ())))
    return None


def _set_of(convert: Convert) -> Convert:
    def convert_set(value: Any, path: str) -> list[Any]:
        if not isinstance(value, list):
            raise Unrepresentable(f"{path}: expected an array")
        return [convert(item, f"{path}[{index}]") for index, item in enumerate(value)]

    return convert_set


def _record(properties: Mapping[str, Any], required: frozenset[str], skip: frozenset[str] = frozenset()) -> _Typed:
    fields: dict[str, _Typed] = {}
    for name, schema in properties.items():
        typed = _typed(schema) if name not in skip and isinstance(schema, dict) else None
        if typed is not None:
            fields[name] = _Typed(typed.cedar, typed.convert, optional=typed.optional or name not in required)
    attributes = {
        name: {**typed.cedar, **({"required": False} if typed.optional else {})} for name, typed in fields.items()
    }

    def convert_record(value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise Unrepresentable(f"{path}: expected an object")
        # A null is an absent optional value (Cedar has no null); a name the schema leaves out of
        # the context (not expressible) is not carried either.
        return {
            name: fields[name].convert(item, f"{path}.{name}")
            for name, item in value.items()
            if name in fields and item is not None
        }

    return _Typed({"type": "Record", "attributes": attributes}, convert_record)


def tool_arguments(spec: ToolSpec) -> _Typed:
    """The record of a tool's arguments (its input schema's properties, less the session handle,
    which is the platform's and never in a call's arguments)."""
    properties, required = spec.input_schema.get("properties"), spec.input_schema.get("required")
    skip = frozenset({SESSION_HANDLE_ARGUMENT}) if spec.session == "required" else frozenset()
    return _record(
        properties if isinstance(properties, Mapping) else {},
        frozenset(name for name in required if isinstance(name, str)) if isinstance(required, list) else frozenset(),
        skip,
    )


def _record_type(attributes: Mapping[str, CedarType]) -> CedarType:
    return {"type": "Record", "attributes": dict(attributes)}


_OPTIONAL_STRING: CedarType = {"type": "String", "required": False}


@dataclass(frozen=True)
class CatalogSchema:
    """A catalog's Cedar schema (``json``), the converters of its tools' arguments and its static
    entities (the actions with their groups, the tools, fixed resources and prompts)."""

    json: dict[str, Any]
    arguments: dict[str, Convert]
    entities: list[dict[str, Any]]

    @classmethod
    def of(cls, catalog: Catalog) -> CatalogSchema:
        names = catalog.tools.names()
        clashing = sorted(set(names) & set(PLATFORM_ACTIONS))
        if clashing:
            raise CatalogNames(f"a tool may not be named {', '.join(clashing)}: it is a policy action")
        entity_types: dict[str, Any] = {
            USER: {
                "memberOfTypes": [GROUP],
                "shape": _record_type(
                    {
                        "subject": {"type": "String"},
                        "kind": {"type": "String"},
                        "scopes": {"type": "Set", "element": {"type": "String"}},
                        "tenant": _OPTIONAL_STRING,
                        "clientId": _OPTIONAL_STRING,
                    }
                ),
            },
            GROUP: {},
            TOOL: {
                "shape": _record_type(
                    {"name": {"type": "String"}, "readOnly": {"type": "Boolean"}, "destructive": {"type": "Boolean"}}
                )
            },
            RESOURCE: {"shape": _record_type({"uri": {"type": "String"}})},
            PROMPT: {"shape": _record_type({"name": {"type": "String"}})},
        }
        actions: dict[str, Any] = {CALL_TOOL: {}}
        arguments: dict[str, Convert] = {}
        entities: list[dict[str, Any]] = [action_entity(CALL_TOOL, None)]
        for name in names:
            spec = catalog.tools.get(name)
            assert spec is not None
            typed = tool_arguments(spec)
            arguments[name] = typed.convert
            actions[name] = {
                "memberOf": [{"id": CALL_TOOL}],
                "appliesTo": {
                    "principalTypes": [USER],
                    "resourceTypes": [TOOL],
                    "context": _record_type({ARGUMENTS: typed.cedar}),
                },
            }
            entities += [action_entity(name, CALL_TOOL), tool_entity(spec)]
        for action, resource in ((READ_RESOURCE, RESOURCE), (GET_PROMPT, PROMPT)):
            actions[action] = {
                "appliesTo": {"principalTypes": [USER], "resourceTypes": [resource], "context": _record_type({})}
            }
            entities.append(action_entity(action, None))
        entities += [resource_entity(uri) for uri in catalog.resources]
        entities += [resource_entity(template.uri_template) for template in catalog.templates.values()]
        entities += [entity(PROMPT, name, {"name": name}) for name in catalog.prompts]
        schema = {"": {"entityTypes": entity_types, "actions": actions}}
        return cls(json=schema, arguments=arguments, entities=entities)


def entity(
    kind: str, identifier: str, attrs: dict[str, Any], parents: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    return {"uid": {"type": kind, "id": identifier}, "attrs": attrs, "parents": parents or []}


def action_entity(name: str, group: str | None) -> dict[str, Any]:
    return entity("Action", name, {}, [{"type": "Action", "id": group}] if group else [])


def tool_entity(spec: ToolSpec) -> dict[str, Any]:
    """A tool as policies see it: its MCP annotations with the spec's defaults (a tool that is not
    read-only is presumed destructive unless it says otherwise)."""
    read_only = bool(spec.annotations.get("readOnlyHint", False))
    destructive = not read_only and bool(spec.annotations.get("destructiveHint", True))
    return entity(TOOL, spec.name, {"name": spec.name, "readOnly": read_only, "destructive": destructive})


def resource_entity(uri: str) -> dict[str, Any]:
    return entity(RESOURCE, uri, {"uri": uri})
