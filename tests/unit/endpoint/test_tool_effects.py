"""Declared effects: how a tool states what it does to its session, and what is enforced."""

from __future__ import annotations

from typing import Any

import pytest

import mcp_tools
from mcp_platform.mcp.catalog import Catalog
from mcp_platform.mcp.context import Services, ToolContext, ToolEffectViolation
from mcp_platform.mcp.tools import READ_MODIFY_WRITE, READ_ONLY, tool, tool_spec


async def noop(ctx: ToolContext) -> str:
    return "ok"


def test_a_session_tool_without_a_declared_effect_is_read_modify_write() -> None:
    """The safe default: version-checked commit, tool rerun on conflict."""
    spec = tool_spec(tool(description="d", session="required")(noop))
    assert spec.effect == READ_MODIFY_WRITE


def test_read_only_effect_sets_the_read_only_hint_and_a_contradicting_hint_is_refused() -> None:
    read_only = tool_spec(tool(description="d", session="required", effect="read_only")(noop))
    assert read_only.annotations["readOnlyHint"] is True
    with pytest.raises(TypeError, match="contradicts"):
        tool(description="d", session="required", effect="append_only", annotations={"readOnlyHint": True})(noop)
    with pytest.raises(TypeError, match="only to tools with session"):
        tool(description="d", effect="append_only")(noop)
    with pytest.raises(TypeError, match="effect must be one of"):
        tool(description="d", session="required", effect="sometimes")(noop)  # type: ignore[arg-type]


def test_every_shipped_session_tool_declares_a_consistent_effect() -> None:
    """Catalog: read-only tools are hinted read-only, and every other session tool is not."""
    catalog = Catalog.discover(mcp_tools).tools
    for spec in (catalog.get(name) for name in catalog.names()):
        assert spec is not None
        if spec.session == "required":
            assert spec.effect is not None
            assert bool(spec.annotations.get("readOnlyHint")) == (spec.effect == READ_ONLY), spec.name


@pytest.mark.parametrize(
    ("effect", "action"),
    [
        ("read_only", lambda ctx: ctx.append_to_session({"text": "x"})),
        ("read_only", lambda ctx: ctx.set_attributes({"a": 1})),
        ("append_only", lambda ctx: ctx.set_attributes({"a": 1})),
    ],
)
def test_a_tool_doing_what_its_effect_excludes_is_stopped(effect: str, action: Any) -> None:
    ctx = ToolContext(principal="p", services=Services(), effect=effect)
    with pytest.raises(ToolEffectViolation):
        action(ctx)
