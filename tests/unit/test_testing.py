"""mcp_platform.testing.ToolHarness: a feature called in a unit test as the endpoint calls it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from mcp_platform import READ_ONLY, ExtraPut, ToolContext, ToolError, tool
from mcp_platform.adapters.dynamodb.sessions import PreconditionFailed, SessionNotFound
from mcp_platform.protocol.context import ToolEffectViolation
from mcp_platform.testing import ToolHarness
from tests.support.sdk_style_tools.orders import Order, Receipt, Size, order_prompt, place_order, price

RAN: list[str] = []


@tool(session="required", effect="read_modify_write")
def rename(title: str, ctx: ToolContext) -> str:
    """Rename the session; notes the old name."""
    RAN.append(title)
    if not title:
        raise ToolError("a title is needed")
    old = ctx.session.attributes.get("title", "")
    ctx.append_to_session({"role": "note", "text": f"renamed from {old!r}"})
    ctx.set_attributes({**ctx.session.attributes, "title": title})
    return old


@tool(session="required", effect=READ_ONLY)
async def title_of(ctx: ToolContext) -> str:
    return str(ctx.session.attributes.get("title", ""))


@tool(max_seconds=0.05)
async def stalls(ctx: ToolContext) -> str:
    await asyncio.sleep(5)
    return "late"


@dataclass(frozen=True)
class Greetings:
    word: str


@tool
async def greets(ctx: ToolContext, name: str) -> str:
    await ctx.progress(1, 2, "halfway")
    await ctx.log("info", {"greeting": name})
    greetings = ctx.services.deps
    assert isinstance(greetings, Greetings)
    return f"{greetings.word}, {name}"


@tool
def broken() -> str:
    raise RuntimeError("a bug")


@tool(max_seconds=5)
async def times_out_itself() -> str:
    raise TimeoutError("the dependency did not answer")  # not the tool's limit


def test_a_session_tool_commits_what_it_queued_to_the_seeded_session() -> None:
    harness = ToolHarness(principal="alice", attributes={"title": "draft"}, context=[{"role": "note", "text": "x"}])
    result = asyncio.run(harness.call(rename, title="final"))
    assert result == {
        "content": [{"type": "text", "text": "draft"}],
        "structuredContent": {"result": "draft"},
        "isError": False,
    }
    session = harness.session
    assert session.attributes == {"title": "final"} and session.version == 2 and session.tool_calls == 1
    assert session.context == [{"role": "note", "text": "x"}, {"role": "note", "text": "renamed from 'draft'"}]
    assert asyncio.run(harness.call(title_of))["structuredContent"] == {"result": "final"}
    assert harness.session.version == 2  # read-only: nothing committed


@tool(session="required", effect="append_only")
def claim(resource: str, ctx: ToolContext) -> str:
    """Claim a resource for the caller: once, whoever claims it first."""
    ctx.extra_puts.append(
        ExtraPut({"pk": f"claim#{resource}", "sk": "owner", "by": ctx.principal}, if_absent=True, label="claim")
    )
    ctx.append_to_session({"role": "note", "text": f"claimed {resource}"})
    return resource


def test_the_harness_commits_by_the_endpoints_rules() -> None:
    """The tool's own items are committed and conditioned as in the table: a second claim of a
    resource is refused with the claim's label, and commits nothing (not even its note)."""
    harness = ToolHarness(principal="alice")
    asyncio.run(harness.call(claim, resource="r1"))
    with pytest.raises(PreconditionFailed) as refused:
        asyncio.run(harness.call(claim, resource="r1"))
    assert refused.value.label == "claim"
    assert harness.session.context == [{"role": "note", "text": "claimed r1"}] and harness.session.tool_calls == 1
    assert harness.store.items[(None, (("pk", "claim#r1"), ("sk", "owner")))]["by"] == "alice"


@tool(session="required", effect="append_only")
def notes_so_far(ctx: ToolContext) -> int:
    """Wrong for an append-only tool: its answer would depend on what other calls appended."""
    ctx.append_to_session({"role": "note", "text": "one more"})
    return len(ctx.session.context)


def test_an_append_only_tool_that_reads_the_context_is_told_it_is_not_loaded() -> None:
    """Given an append-only tool that reads its session's context (not loaded for such a call, in
    production as here), When it runs, Then reading it raises a ToolEffectViolation saying how to
    declare the tool, rather than showing an empty context, and nothing is committed; its other
    session fields read as they are."""
    harness = ToolHarness(principal="alice", context=[{"role": "note", "text": "x"}])
    with pytest.raises(ToolEffectViolation, match="effect='read_only' or 'read_modify_write'"):
        asyncio.run(harness.call(notes_so_far))
    assert harness.session.context == [{"role": "note", "text": "x"}] and harness.session.tool_calls == 0


@tool(session="required", reads_context=False)
def tally_with_notes(ctx: ToolContext) -> int:
    """Wrong for a tool declared reads_context=False: it reads the context all the same."""
    ctx.set_attribute("tally", len(ctx.session.context))
    return 1


def test_a_tool_declared_not_to_read_the_context_is_told_it_is_not_loaded() -> None:
    """Given a read-modify-write tool declared reads_context=False that reads the context (not
    loaded for its calls, in production as here), When it runs, Then a ToolEffectViolation names
    the declaration, and nothing is committed."""
    harness = ToolHarness(principal="alice", context=[{"role": "note", "text": "x"}])
    with pytest.raises(ToolEffectViolation, match="reads_context=False"):
        asyncio.run(harness.call(tally_with_notes))
    assert harness.session.attributes.get("tally") is None and harness.session.tool_calls == 0


def test_a_call_may_name_another_session_of_its_principal_only() -> None:
    harness = ToolHarness(principal="alice")
    other = harness.store.create_session("alice", attributes={"title": "other"})
    assert asyncio.run(harness.call(title_of, session=other.id))["structuredContent"] == {"result": "other"}
    foreign = harness.store.create_session("bob")
    with pytest.raises(SessionNotFound):
        asyncio.run(harness.call(title_of, session=foreign.id))


def test_refusals_are_the_endpoints_results_and_a_bug_is_raised_as_itself() -> None:
    harness = ToolHarness()
    RAN.clear()
    invalid = asyncio.run(harness.call(rename, title=3))
    assert invalid["isError"] and "arguments.title must be of type string" in invalid["content"][0]["text"]
    assert RAN == []  # refused before the function ran
    failed = asyncio.run(harness.call(rename, title=""))
    assert failed == {"content": [{"type": "text", "text": "a title is needed"}], "isError": True}
    stopped = asyncio.run(harness.call(stalls))
    assert stopped["isError"] and "0.05 s limit" in stopped["content"][0]["text"]
    with pytest.raises(RuntimeError, match="a bug"):
        asyncio.run(harness.call(broken))
    with pytest.raises(TimeoutError, match="the dependency"):
        asyncio.run(harness.call(times_out_itself))


def test_fake_dependencies_and_the_notifications_sent() -> None:
    harness = ToolHarness(deps=Greetings(word="Hej"))
    assert asyncio.run(harness.call(greets, name="Ada"))["structuredContent"] == {"result": "Hej, Ada"}
    assert [message["method"] for message in harness.notifications] == [
        "notifications/progress",
        "notifications/message",
    ]
    assert harness.notifications[1]["params"]["data"] == {"greeting": "Ada"}


def test_python_values_go_in_and_the_returned_value_comes_out() -> None:
    """Arguments may be the declared types (sent as their JSON), ``value`` returns what the
    function returned, resources and prompts are read and got from strings."""
    harness = ToolHarness(principal="alice")
    receipt = asyncio.run(harness.value(place_order, order=Order(item="tea", quantity=2), size=Size.SMALL))
    assert receipt == Receipt(item="tea", size=Size.SMALL, quantity=2, total=5.0, ordered_by="alice")
    with pytest.raises(ValueError, match=r"arguments\.size must be one of"):
        asyncio.run(harness.value(place_order, order={"item": "tea"}, size="medium"))
    contents: list[Any] = asyncio.run(harness.read(price, size="large"))
    assert contents == [
        {"uri": "orders://prices/large", "mimeType": "application/json", "text": '{"size":"large","price":4.0}'}
    ]
    messages = asyncio.run(harness.get_prompt(order_prompt, item="tea", quantity="3"))
    assert messages == [
        {"role": "user", "content": {"type": "text", "text": "Please order 3 small tea, at 7.5 in total."}}
    ]
