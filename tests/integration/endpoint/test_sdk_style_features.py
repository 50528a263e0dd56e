"""Features written as the official SDK's MCPServer documents them (tests/support/sdk_style_tools:
sync functions, docstrings, pydantic model and Enum arguments, a model returned, the context under
any name) are served over HTTP with the schemas their types imply, and called with their
arguments converted to the declared types (SPEC "Features": tools with structured output).

The official SDK client drives the calls: it checks each structured result against the output
schema it listed, and every message the server sends is validated against the official models
when the module's server stops.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from tests.support import sdk_style_tools
from tests.support.endpoint import AwsStack, Instance, endpoint_instance, sdk_client

pytestmark = pytest.mark.integration

ORDER_SCHEMA_PROPERTIES = {"item", "quantity"}


@pytest.fixture(scope="module")
def served(aws: AwsStack) -> Iterator[Instance]:
    with endpoint_instance(aws, extra_tools=(sdk_style_tools,)) as running:
        yield running
    running.recorder.validate_all()


def run(body: Any) -> None:
    anyio.run(body)


def test_the_listing_carries_the_schemas_the_types_imply(served: Instance, api_key: str) -> None:
    """Given place_order(order: Order, size: Size, context: ToolContext) -> Receipt, a sync def
    with a docstring, when a client lists the tools, then its description is the docstring, its
    input schema has the model's and the Enum's schemas and no context, and its output schema is
    the returned model's."""

    async def body() -> None:
        async with sdk_client(served.url, api_key, "2026-07-28") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        place = tools["place_order"]
        assert place.description == "Place an order for an item in a size, and return its receipt."
        arguments = place.input_schema
        assert set(arguments["properties"]) == {"order", "size"} and arguments["required"] == ["order", "size"]
        order = arguments["properties"]["order"]
        assert order["type"] == "object" and set(order["properties"]) == ORDER_SCHEMA_PROPERTIES
        assert order["properties"]["quantity"]["minimum"] == 1 and order["required"] == ["item"]
        assert arguments["properties"]["size"] == {"type": "string", "enum": ["small", "large"]}
        receipt = place.output_schema
        assert receipt is not None and receipt["type"] == "object"
        assert set(receipt["required"]) == {"item", "size", "quantity", "total", "ordered_by"}
        planned = tools["plan_days"]
        window = planned.input_schema["properties"]["window"]
        assert window["properties"]["start"] == {"type": "string", "format": "date"} and window["required"] == ["start"]
        assert planned.output_schema == {
            "type": "object",
            "properties": {"result": {"type": "array", "items": {"type": "string"}}},
            "required": ["result"],
        }

    run(body)


def test_a_call_converts_the_arguments_and_returns_the_model_as_structured_content(
    served: Instance, api_key: str
) -> None:
    """Given JSON arguments, when place_order is called, then the function receives an Order and
    a Size member (it reads the order's attributes and prices by the member) and its Receipt is
    the structured content, with the caller in it (the context under the name ``context``)."""

    async def body() -> None:
        async with sdk_client(served.url, api_key, "2026-07-28") as client:
            result = await client.call_tool("place_order", {"order": {"item": "tea", "quantity": 2}, "size": "large"})
        assert not result.is_error, result
        assert result.structured_content == {
            "item": "tea",
            "size": "large",
            "quantity": 2,
            "total": 8.0,
            "ordered_by": "alice",
        }

    run(body)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"order": {"item": "tea", "quantity": 0}, "size": "large"}, "arguments.order.quantity"),
        ({"order": {"item": "tea"}, "size": "medium"}, "arguments.size"),
        ({"order": "tea", "size": "small"}, "arguments.order"),
        ({"window": {"start": "not a date"}, "tags": []}, "arguments.window"),
    ],
)
def test_refused_arguments_are_an_error_result_naming_the_field(
    served: Instance, api_key: str, arguments: dict[str, Any], named: str
) -> None:
    """Given arguments a declared type refuses (a model's constraint, an Enum's values, a date
    that does not parse), when the tool is called, then the answer is an isError result naming
    the field, as for any invalid arguments, and the function never runs."""
    tool = "plan_days" if "window" in arguments else "place_order"

    async def body() -> None:
        async with sdk_client(served.url, api_key, "2026-07-28") as client:
            result = await client.call_tool(tool, arguments)
        assert result.is_error and named in result.content[0].text, result

    run(body)


def test_a_sync_session_tool_commits_what_it_queued_from_its_worker_thread(served: Instance, api_key: str) -> None:
    """Given log_order, a sync append-only session tool whose context is named session_context,
    when it is called on a session, then the note it appended from its worker thread is committed
    (read_notes sees it) and its int return is wrapped as {"result": ...}."""

    async def body() -> None:
        async with sdk_client(served.url, api_key, "2026-07-28") as client:
            handle = (await client.call_tool("open_session", {})).structured_content["session"]
            logged = await client.call_tool("log_order", {"order": {"item": "scone", "quantity": 3}, "session": handle})
            notes = await client.call_tool("read_notes", {"session": handle})
        assert logged.structured_content == {"result": 3} and logged.content[0].text == "3"
        assert [note["text"] for note in notes.structured_content["notes"]] == ["3 x scone"]

    run(body)


def test_a_list_return_is_wrapped_and_dataclass_typeddict_tuple_arguments_are_converted(
    served: Instance, api_key: str
) -> None:
    """Given plan_days(window: Window, tags: list[Tag], grid: tuple[int, int]) -> list[str], when
    it is called with JSON, then the dataclass's date is a date (it adds days to it), the tuple
    unpacks, and the list is the structured content's ``result``."""

    async def body() -> None:
        async with sdk_client(served.url, api_key, "2026-07-28") as client:
            arguments = {"window": {"start": "2026-02-27", "days": 2}, "tags": [{"name": "a"}], "grid": [2, 3]}
            result = await client.call_tool("plan_days", arguments)
        assert result.structured_content == {"result": ["2026-02-27 a draft 2x3", "2026-02-28 a draft 2x3"]}

    run(body)


def test_typed_template_variables_and_prompt_arguments_are_converted_from_their_strings(
    served: Instance, api_key: str
) -> None:
    """Given a resource template whose variable is an Enum and a prompt with Enum and int
    arguments (sync functions without a context), when they are read and got, then the strings
    are converted; a variable its type refuses is -32602 naming it."""

    async def body() -> None:
        async with sdk_client(served.url, api_key, "2026-07-28") as client:
            read = await client.read_resource("orders://prices/large")
            got = await client.get_prompt("order_prompt", {"item": "tea", "size": "large", "quantity": "2"})
            with pytest.raises(MCPError) as refused:
                await client.read_resource("orders://prices/medium")
        assert read.contents[0].text == '{"size":"large","price":4.0}'
        assert got.messages[0].content.text == "Please order 2 large tea, at 8 in total."
        assert refused.value.error.code == -32602 and "{size}" in refused.value.error.message

    run(body)
