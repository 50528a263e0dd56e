"""plan_days: an async tool whose arguments are a dataclass, TypedDicts, a fixed tuple and a
Literal, whose return (a list) is wrapped as ``{"result": [...]}``, and with no context at all."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Annotated, Literal, NotRequired, TypedDict

from mcp_platform import tool


@dataclass(frozen=True)
class Window:
    start: datetime.date
    days: int = 3


class Tag(TypedDict):
    name: str
    weight: NotRequired[float]


@tool(annotations={"readOnlyHint": True})
async def plan_days(
    window: Window,
    tags: list[Tag],
    grid: Annotated[tuple[int, int], "Rows and columns"] = (1, 1),
    mode: Literal["draft", "final"] = "draft",
) -> list[str]:
    """The days of a window as ISO dates, each labelled with the tags and the mode."""
    label = ",".join(tag["name"] for tag in tags)
    rows, columns = grid
    return [
        f"{(window.start + datetime.timedelta(days=day)).isoformat()} {label} {mode} {rows}x{columns}"
        for day in range(window.days)
    ]
