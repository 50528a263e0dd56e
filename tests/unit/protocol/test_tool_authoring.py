"""Writing a tool as the SDK's MCPServer documents it: the decorator returns the function, reads
the docstring, finds the context by its annotation, runs a sync function in a worker thread, and
derives the output schema from the return annotation (SPEC "Features": tools, structured output)."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypedDict

import pytest

from mcp_platform import ToolContext, ToolError, ToolResult, tool
from mcp_platform.protocol.schema import SchemaError
from mcp_platform.protocol.tools import ToolCatalog, tool_spec
from tests.support.services import make_services


def context() -> ToolContext:
    return ToolContext(principal="alice", services=make_services())


async def call(decorated: Any, **arguments: Any) -> dict[str, Any]:
    """What the endpoint does with a call: check, convert, run, turn the value into a result."""
    spec = tool_spec(decorated)
    spec.validate_arguments(arguments)
    return spec.to_result(await spec.run(context(), **arguments))


def test_bare_and_called_decorators_return_the_function_itself_with_its_spec() -> None:
    def double(x: int) -> int:
        """Double a number."""
        return 2 * x

    async def triple(x: int) -> int:
        return 3 * x

    assert tool(double) is double and double(4) == 8  # still callable as written
    assert tool(name="times_three", description="Triple it.")(triple) is triple
    assert (tool_spec(double).name, tool_spec(double).description) == ("double", "Double a number.")
    assert (tool_spec(triple).name, tool_spec(triple).description) == ("times_three", "Triple it.")
    assert ToolCatalog([double, triple]).names() == ["double", "times_three"]


def test_the_context_is_found_by_its_annotation_under_any_name_or_as_an_unannotated_ctx() -> None:
    def by_annotation(text: str, caller: ToolContext) -> str:
        return f"{caller.principal}: {text}"

    async def legacy(ctx, text: str) -> str:  # type: ignore[no-untyped-def]
        return f"{ctx.principal}: {text}"

    async def without(text: str) -> str:
        return text

    for decorated in (by_annotation, legacy, without):
        spec = tool_spec(tool(decorated))
        assert list(spec.input_schema["properties"]) == ["text"], decorated.__name__
    assert asyncio.run(call(by_annotation, text="hi"))["structuredContent"] == {"result": "alice: hi"}
    assert asyncio.run(call(legacy, text="hi"))["structuredContent"] == {"result": "alice: hi"}
    assert asyncio.run(call(without, text="hi"))["structuredContent"] == {"result": "hi"}


def test_a_sync_tool_runs_in_a_worker_thread_not_on_the_event_loop() -> None:
    seen: dict[str, int] = {}

    @tool
    def where(ctx: ToolContext) -> str:
        seen["tool"] = threading.get_ident()
        return "ok"

    async def body() -> None:
        seen["loop"] = threading.get_ident()
        await call(where)

    asyncio.run(body())
    assert seen["tool"] != seen["loop"]


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Point(TypedDict):
    x: int
    y: int


@dataclass
class Box:
    width: int
    colour: Colour


def wrapped(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}


COLOUR = {"enum": ["red", "blue"], "type": "string"}
POINT = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]}
BOX = {
    "type": "object",
    "properties": {"width": {"type": "integer"}, "colour": COLOUR},
    "required": ["width", "colour"],
}


@pytest.mark.parametrize(
    ("returns", "value", "schema", "structured", "text"),
    [
        (str, "hi", wrapped({"type": "string"}), {"result": "hi"}, "hi"),
        (int, 7, wrapped({"type": "integer"}), {"result": 7}, "7"),
        (list[float], [1.5], wrapped({"type": "array", "items": {"type": "number"}}), {"result": [1.5]}, "[1.5]"),
        (Colour, Colour.BLUE, wrapped(COLOUR), {"result": "blue"}, "blue"),
        (Point, {"x": 1, "y": 2}, POINT, {"x": 1, "y": 2}, '{"x":1,"y":2}'),
        (Box, Box(2, Colour.RED), BOX, {"width": 2, "colour": "red"}, '{"width":2,"colour":"red"}'),
        (
            dict[str, int],
            {"a": 1},
            {"type": "object", "additionalProperties": {"type": "integer"}},
            {"a": 1},
            '{"a":1}',
        ),
    ],
)
def test_the_return_annotation_gives_the_output_schema_and_the_structured_content(
    returns: Any, value: Any, schema: dict[str, Any], structured: Any, text: str
) -> None:
    """A TypedDict, a dataclass or a dict is the structured content; any other annotated type
    is wrapped as {"result": ...}, as the SDK's MCPServer does; the text is the value's JSON (a
    string as it is)."""

    async def produce() -> Any:
        return value

    produce.__annotations__["return"] = returns
    spec = tool_spec(tool(produce))
    assert spec.output_schema == schema
    result = asyncio.run(call(produce))
    assert result == {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}


def test_no_annotation_any_and_toolresult_give_no_output_schema_and_any_json_value_is_accepted() -> None:
    """An unannotated tool may return any JSON data (an int, a list, a float, a bool): its text."""

    async def loose(kind: str):  # type: ignore[no-untyped-def]
        return {"int": 3, "list": [1, "a"], "float": 0.5, "bool": True}[kind]

    async def built() -> ToolResult:
        return ToolResult(content=[{"type": "text", "text": "mine"}])

    assert tool_spec(tool(loose)).output_schema is None and tool_spec(tool(built)).output_schema is None
    texts = {
        kind: asyncio.run(call(loose, kind=kind))["content"][0]["text"] for kind in ("int", "list", "float", "bool")
    }
    assert texts == {"int": "3", "list": '[1,"a"]', "float": "0.5", "bool": "true"}
    assert asyncio.run(call(built)) == {"content": [{"type": "text", "text": "mine"}], "isError": False}


def test_hand_written_output_schema_and_structured_output_false_keep_their_meaning() -> None:
    written = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    async def counted() -> dict[str, Any]:
        return {"n": 1}

    async def text_only() -> int:
        return 5

    assert tool_spec(tool(output_schema=written)(counted)).output_schema == written
    assert tool_spec(tool(structured_output=False)(text_only)).output_schema is None
    assert asyncio.run(call(text_only)) == {"content": [{"type": "text", "text": "5"}], "isError": False}


def test_a_value_its_return_annotation_excludes_is_a_defect_of_the_tool() -> None:
    """TypeError: the runner answers it as an internal error, never as a result that breaks
    the schema the client was promised."""

    async def wrong() -> int:
        return "five"  # type: ignore[return-value]

    tool(wrong)
    with pytest.raises(TypeError, match="return annotation excludes"):
        asyncio.run(call(wrong))


class Opaque:
    """A class with no JSON form (no fields the SDK or this platform could describe)."""


def test_a_return_type_without_a_json_form_is_unstructured_and_a_tool_error_passes_through() -> None:
    async def opaque() -> Opaque:
        return Opaque()

    async def failing() -> str:
        raise ToolError("no")

    assert tool_spec(tool(opaque)).output_schema is None  # no JSON form: unstructured, as the SDK does
    with pytest.raises(TypeError, match="no JSON form"):
        asyncio.run(call(opaque))
    with pytest.raises(SchemaError):
        tool(structured_output=True)(opaque)
    with pytest.raises(ToolError):
        asyncio.run(call(tool(failing)))


def test_refusals_at_decoration_name_the_problem() -> None:
    def untyped(ctx: ToolContext, value):  # type: ignore[no-untyped-def]
        return value

    def star(**extra: int) -> str:
        return ""

    with pytest.raises(SchemaError, match="needs a type hint"):
        tool(untyped)
    with pytest.raises(SchemaError, match=r"\*\*extra"):
        tool(star)
    with pytest.raises(TypeError, match="lambda"):
        tool(lambda x: x)


def test_a_toolresult_from_a_tool_with_an_output_schema_owes_its_structured_content() -> None:
    """Clients check a non-error result against the output schema they listed: a ToolResult
    without the promised structured content is a defect; a union with ToolResult promises none."""

    async def built(structured: bool) -> int:
        text = [{"type": "text", "text": "1"}]
        return ToolResult(content=text, structured={"result": 1} if structured else None)  # type: ignore[return-value]

    async def either(flag: bool) -> int | ToolResult:
        return 1 if flag else ToolResult(content=[])

    tool(built)
    assert asyncio.run(call(built, structured=True))["structuredContent"] == {"result": 1}
    with pytest.raises(TypeError, match="needs that structured content"):
        asyncio.run(call(built, structured=False))
    assert tool_spec(tool(either)).output_schema is None
