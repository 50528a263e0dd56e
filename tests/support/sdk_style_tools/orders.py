"""place_order and log_order: sync tools with a pydantic model and an Enum argument, a model
returned, the context under names other than ``ctx``; the price resource and the order prompt.

Each function would fail if it received the JSON values instead of the declared types: a price
is looked up by the Enum member (a plain Enum, so its string is no key), the order is read
through its attributes."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field

from mcp_platform import ToolContext, ToolError, prompt, resource, tool


class Size(Enum):
    SMALL = "small"
    LARGE = "large"


PRICES = {Size.SMALL: 2.5, Size.LARGE: 4.0}


class Order(BaseModel):
    item: str = Field(min_length=1, description="What to order")
    quantity: int = Field(default=1, ge=1, le=100, description="How many")


class Receipt(BaseModel):
    item: str
    size: Size
    quantity: int
    total: float
    ordered_by: str


@tool
def place_order(order: Order, size: Size, context: ToolContext) -> Receipt:
    """Place an order for an item in a size, and return its receipt."""
    if order.item == "unobtainium":
        raise ToolError("unobtainium is out of stock")
    total = order.quantity * PRICES[size]
    return Receipt(item=order.item, size=size, quantity=order.quantity, total=total, ordered_by=context.principal)


@tool(session="required", effect="append_only")
def log_order(order: Order, session_context: ToolContext) -> int:
    """Note an order in the session; returns its quantity."""
    session_context.append_to_session({"role": "note", "text": f"{order.quantity} x {order.item}"})
    return order.quantity


@resource("orders://prices/{size}", mime_type="application/json")
def price(size: Size) -> dict[str, object]:
    """The unit price of a size."""
    return {"size": size.value, "price": PRICES[size]}


@prompt
def order_prompt(item: str, size: Size = Size.SMALL, quantity: int = 1) -> str:
    """Ask the model to place an order."""
    return f"Please order {quantity} {size.value} {item}, at {PRICES[size] * quantity:g} in total."
