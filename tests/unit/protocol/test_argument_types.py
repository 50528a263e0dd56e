"""Argument types beyond primitives: the schema each implies, the refusal that names the field,
and the value the function receives (protocol.schema, protocol.conversion, protocol.signature)."""

from __future__ import annotations

import asyncio
import datetime
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import pytest
from pydantic import BaseModel, Field

from mcp_platform.protocol import signature
from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.schema import SchemaError
from mcp_platform.protocol.signature import json_arguments, output_of, signature_of, text_arguments
from mcp_platform.protocol.tools import tool, tool_spec
from tests.support.services import make_services


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


class Tag(TypedDict):
    name: str
    weight: NotRequired[float]  # a string annotation here (future import): read from the hint


@dataclass
class Window:
    start: datetime.date
    colour: Colour = Colour.RED
    labels: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.labels and self.colour is Colour.BLUE:
            raise ValueError("a blue window needs a label")


class Item(BaseModel):
    name: str
    count: int = Field(default=1, ge=1, description="How many")


class Basket(BaseModel):
    items: list[Item]
    colour: Colour


RECEIVED: dict[str, Any] = {}


@tool
async def typed(
    colour: Colour,
    level: Level,
    tags: list[Tag],
    window: Window,
    pair: tuple[int, str],
    many: tuple[int, ...],
    unique: set[str],
    when: datetime.datetime,
    ident: uuid.UUID,
    maybe: Colour | None = None,
    either: int | Colour = 0,
    mode: Literal["a", "b"] = "a",
    note: Annotated[str, "A note"] = "",
) -> str:
    RECEIVED.update(locals())
    return "ok"


@tool
def shopping(basket: Basket, extra: Annotated[Item | None, Field(description="One more item")] = None) -> Basket:
    RECEIVED.update(basket=basket, extra=extra)
    return basket


GOOD = {
    "colour": "blue",
    "level": 2,
    "tags": [{"name": "a", "weight": 0.5, "ignored": True}, {"name": "b"}],
    "window": {"start": "2026-03-01", "colour": "blue", "labels": ["x"]},
    "pair": [1, "one"],
    "many": [1, 2, 3],
    "unique": ["x", "x", "y"],
    "when": "2026-03-01T10:00:00Z",
    "ident": "12345678-1234-5678-1234-567812345678",
    "either": "red",
}


def run(decorated: Any, arguments: dict[str, Any]) -> Any:
    spec = tool_spec(decorated)
    spec.validate_arguments(arguments)
    return asyncio.run(spec.run(ToolContext(principal="p", services=make_services()), **arguments))


def test_each_type_has_the_schema_a_client_needs() -> None:
    properties = tool_spec(typed).input_schema["properties"]
    assert properties["colour"] == {"enum": ["red", "blue"], "type": "string"}
    assert properties["level"] == {"enum": [1, 2], "type": "integer"}
    assert properties["tags"]["items"] == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "weight": {"type": "number"}},
        "required": ["name"],
    }
    assert properties["window"]["properties"]["start"] == {"type": "string", "format": "date"}
    assert properties["window"]["properties"]["colour"] == {"enum": ["red", "blue"], "type": "string", "default": "red"}
    assert properties["window"]["required"] == ["start"]
    assert properties["pair"] == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "minItems": 2,
        "maxItems": 2,
    }
    assert properties["many"] == {"type": "array", "items": {"type": "integer"}}
    assert properties["unique"] == {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    assert properties["when"] == {"type": "string", "format": "date-time"}
    assert properties["ident"] == {"type": "string", "format": "uuid"}
    assert properties["either"] == {
        "anyOf": [{"type": "integer"}, {"enum": ["red", "blue"], "type": "string"}],
        "default": 0,
    }
    assert properties["note"] == {"type": "string", "description": "A note", "default": ""}


def test_the_function_receives_the_declared_types() -> None:
    assert run(typed, GOOD) == "ok"
    assert RECEIVED["colour"] is Colour.BLUE and RECEIVED["level"] is Level.HIGH and RECEIVED["either"] is Colour.RED
    assert RECEIVED["tags"] == [{"name": "a", "weight": 0.5}, {"name": "b"}]  # undeclared keys dropped
    assert RECEIVED["window"] == Window(datetime.date(2026, 3, 1), Colour.BLUE, ["x"])
    assert RECEIVED["pair"] == (1, "one") and RECEIVED["many"] == (1, 2, 3) and RECEIVED["unique"] == {"x", "y"}
    assert RECEIVED["when"] == datetime.datetime(2026, 3, 1, 10, tzinfo=datetime.UTC)
    assert RECEIVED["ident"] == uuid.UUID(GOOD["ident"]) and RECEIVED["maybe"] is None
    run(typed, {**GOOD, "maybe": "red", "either": 5})
    assert RECEIVED["maybe"] is Colour.RED and RECEIVED["either"] == 5


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"colour": "green"}, "arguments.colour must be one of"),
        ({"level": True}, "arguments.level must be of type integer"),
        ({"tags": [{"weight": 1}]}, r"arguments.tags\[0\].name is required"),
        ({"pair": [1]}, "arguments.pair must hold exactly 2 items"),
        ({"pair": [1, 2]}, r"arguments.pair\[1\] must be of type string"),
        ({"when": "yesterday"}, "arguments.when: Invalid isoformat"),
        ({"ident": "not-a-uuid"}, "arguments.ident: "),
        ({"window": {"start": "2026-03-01", "colour": "blue"}}, "arguments.window: a blue window needs a label"),
    ],
)
def test_a_value_the_type_refuses_is_refused_when_admitted_naming_the_field(change: dict[str, Any], named: str) -> None:
    """Refused by validate_arguments (the call is then an Invalid arguments result and the
    function never runs), including conversions that can refuse: a date, a dataclass's
    __post_init__."""
    with pytest.raises(ValueError, match=named):
        tool_spec(typed).validate_arguments({**GOOD, **change})


def test_pydantic_models_and_fields_are_described_validated_and_converted_by_pydantic() -> None:
    spec = tool_spec(shopping)
    schema = spec.input_schema
    assert schema["properties"]["basket"]["properties"]["items"]["items"] == {"$ref": "#/$defs/Item"}
    assert schema["$defs"]["Item"]["properties"]["count"]["minimum"] == 1  # nested models hoisted to the root
    assert schema["properties"]["extra"]["description"] == "One more item"
    with pytest.raises(
        ValueError, match=r"arguments.basket.items\[0\].count: Input should be greater than or equal to 1"
    ):
        spec.validate_arguments({"basket": {"items": [{"name": "tea", "count": 0}], "colour": "red"}})
    basket = {"items": [{"name": "tea", "count": "2"}], "colour": "blue"}  # pydantic is lenient where it is
    returned = run(shopping, {"basket": basket, "extra": {"name": "milk"}})
    assert RECEIVED["basket"] == Basket(items=[Item(name="tea", count=2)], colour=Colour.BLUE)
    assert RECEIVED["extra"] == Item(name="milk") and returned is RECEIVED["basket"]
    assert spec.to_result(returned)["structuredContent"] == {"items": [{"name": "tea", "count": 2}], "colour": "blue"}
    assert spec.output_schema is not None and spec.output_schema["required"] == ["items", "colour"]


def test_two_different_models_of_one_name_in_one_tool_are_refused() -> None:
    first = type("Thing", (BaseModel,), {"__annotations__": {"a": int}})
    second = type("Thing", (BaseModel,), {"__annotations__": {"b": str}})
    holder = type("Holder", (BaseModel,), {"__annotations__": {"thing": second}})

    def both(one: Any, two: Any) -> str:
        return ""

    both.__annotations__.update(one=list[first], two=holder)
    with pytest.raises(SchemaError, match="both named 'Thing'"):
        tool(both)


@dataclass
class Node:
    children: list[Node]


def test_a_recursive_dataclass_is_refused_with_the_way_out() -> None:
    def walk(node: Any) -> str:
        return ""

    walk.__annotations__["node"] = Node
    with pytest.raises(SchemaError, match=r"refers to itself.*pydantic model"):
        tool(walk)


def test_the_platform_start_imports_no_pydantic() -> None:
    """Cold start: features that use no pydantic model (the platform's own) never import
    pydantic; the platform only recognises models a feature module brought (sys.modules), so
    nothing loads it for them."""
    code = (
        "import sys\n"
        "from tests.support import platform_tools\n"
        "from mcp_platform.bootstrap.endpoint import build_app\n"
        "from mcp_platform.protocol.catalog import Catalog\n"
        "Catalog.discover(platform_tools)\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('pydantic', 'pydantic_core')))\n"
    )
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=False)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


PLAIN = [str, int, float, bool, None, Any, object, Literal["a", "b"], list, dict, list[str], list[int | None]]
PLAIN += [dict[str, Any], dict[str, list[int]], str | None, int | str, Annotated[str, "text"]]
PLAIN += [Annotated[int | None, "n"]]
CONVERTED = [datetime.date, uuid.UUID, Colour, Colour | None, tuple[int, str], set[str], Tag, Window, list[Colour]]


@pytest.mark.parametrize("annotation", [*PLAIN, *CONVERTED], ids=repr)
def test_a_type_is_described_alike_whether_or_not_its_path_loads_the_conversions(
    annotation: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """protocol.conversion is loaded for the first type that needs it (cold start): while no module
    has imported pydantic, plain JSON types skip it. That shortcut must derive exactly what the
    full path does: the input schema, which arguments are converted, the output, and which
    string arguments are parsed."""

    def read(value: Any) -> Any:
        return value

    read.__annotations__ = {"value": annotation, "return": annotation}

    def derived() -> tuple[Any, ...]:
        found = signature_of(read)
        arguments, output = json_arguments(found), output_of(found, unstructured=())
        described = None if output is None else (output.schema, output.wrapped, output.serialize is None)
        return arguments.schema, sorted(arguments.converters), described, sorted(text_arguments(found))

    full = derived()  # pydantic is loaded in this process (imported above): every type takes the full path
    monkeypatch.setattr(signature, "_pydantic_loaded", lambda: False)
    assert derived() == full
