"""Declared effects: how a tool states what it does to its session, and what is enforced."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from mcp_platform.adapters.dynamodb.sessions import Session, SessionExpired, StoreThrottled
from mcp_platform.application.services import Services
from mcp_platform.application.sessions.changes import AttributeWrites, PendingChanges, SessionChanges
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.context import ToolContext, ToolEffectViolation
from mcp_platform.protocol.jsonrpc import Request
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.protocol.tools import APPEND_ONLY, READ_MODIFY_WRITE, READ_ONLY, Effect, tool, tool_spec
from tests.support import platform_tools
from tests.support.services import make_services


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


def test_reads_context_is_a_session_tools_declaration_and_an_append_only_tool_never_reads_it() -> None:
    """The context is loaded for a session tool's calls unless it declares reads_context=False; an
    append-only tool never loads it; a tool without a session cannot declare it."""
    assert tool_spec(tool(description="d", session="required")(noop)).reads_context is True
    assert tool_spec(tool(description="d", session="required", reads_context=False)(noop)).reads_context is False
    assert tool_spec(tool(description="d", session="required", effect="append_only")(noop)).reads_context is False
    with pytest.raises(TypeError, match="reads_context applies only to tools with session"):
        tool(description="d", reads_context=False)(noop)


def test_every_platform_session_tool_declares_a_consistent_effect() -> None:
    """Catalog: read-only tools are hinted read-only, and every other session tool is not."""
    catalog = Catalog.discover(platform_tools).tools
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
    ctx = ToolContext(principal="p", services=make_services(), effects=PendingChanges(effect))
    with pytest.raises(ToolEffectViolation):
        action(ctx)


def test_a_context_without_a_unit_of_work_changes_no_session() -> None:
    """A resource's or a prompt's context (no tools/call behind it) refuses every effect."""
    ctx = ToolContext(principal="p", services=make_services())
    for action in (
        lambda: ctx.append_to_session({"text": "x"}),
        lambda: ctx.extra_puts,
        lambda: ctx.set_attributes({}),
    ):
        with pytest.raises(ToolEffectViolation):
            action()


class SlidingStore:
    """The two store calls of a read-only tools/call: the load, and the D7 slide (which may fail)."""

    def __init__(self, session: Session, slide_error: Exception | None) -> None:
        self.session, self.slide_error = session, slide_error
        self.slides = 0

    def load_for_tool_call(self, session_id: str, call_id: str, **_: Any) -> tuple[Session, None]:
        return self.session, None

    def slide_expiry(self, session: Session, *, owner: str | None = None) -> Session:
        self.slides += 1
        if self.slide_error is not None:
            raise self.slide_error
        return replace(session, ttl=session.ttl + 3600)


def run_session_info(store: SlidingStore) -> dict[str, Any]:
    call = RequestContext("alice", "2026-07-28", True)
    catalog = Catalog.discover(platform_tools).tools
    params = {"name": "session_info", "arguments": {"session": store.session.id}}
    runner = ToolCallRunner(Services(store=store, deps=None))
    prepared = runner.prepare(Request("tools/call", params, 1), call, catalog)

    async def load_and_run() -> dict[str, Any]:
        return await runner.run(await runner.load(prepared, call), call)

    result: dict[str, Any] = asyncio.run(load_and_run())["structuredContent"]
    return result


@pytest.mark.parametrize(
    ("slide_error", "extended"),
    [(None, True), (StoreThrottled("throttled"), False), (SessionExpired("s" * 32), False)],
)
def test_d7_a_read_only_call_slides_the_expiry_and_a_failed_slide_never_fails_the_read(
    slide_error: Exception | None, extended: bool
) -> None:
    """D7: Given a read-only session tool, When it is called, Then the runner asks the store to
    slide the session's expiry before the tool runs and the tool sees the slid ttl; When the
    slide fails (throttled, or the session expired since the load), Then the read still answers
    from the session it loaded."""
    store = SlidingStore(Session(id="s" * 32, owner="alice", status="active", version=3, ttl=1_000), slide_error)
    answer = run_session_info(store)
    assert store.slides == 1
    assert answer["expires_at"] == (4_600 if extended else 1_000) and answer["version"] == 3


def counter_context(*, effect: Effect = READ_MODIFY_WRITE) -> tuple[ToolContext, PendingChanges]:
    session = Session(
        id="s" * 32,
        owner="alice",
        status="active",
        version=7,
        ttl=1_000,
        attributes={"counters": {"c": 1}, "title": "t"},
        attribute_versions={"counters": 4},
    )
    pending = PendingChanges(effect, session)
    return ToolContext("alice", make_services(), session, effects=pending), pending


def test_d2_a_tool_that_reads_attributes_one_by_one_commits_under_their_versions_alone() -> None:
    """D2 per attribute: Given a run that reads ``counters`` through ``attribute`` and sets it,
    Then its commit is conditioned on the version it saw (4) and writes the new value; an
    attribute never read and never written is not conditioned on."""
    ctx, pending = counter_context()
    counters = ctx.attribute("counters")
    ctx.set_attribute("counters", {**counters, "c": counters["c"] + 1})
    assert ctx.attribute("counters") == {"c": 2}  # the run sees its own write
    writes = AttributeWrites(seen={"counters": 4}, values={"counters": {"c": 2}})
    assert pending.changes() == SessionChanges(READ_MODIFY_WRITE, by_attribute=writes)
    blind, blind_pending = counter_context()
    blind.set_attribute("other", 1)  # a write is conditioned on the version it replaces (0)
    assert blind_pending.changes().by_attribute == AttributeWrites(seen={"other": 0}, values={"other": 1})


def test_d2_a_tool_that_reads_the_session_commits_its_attributes_under_the_session_version() -> None:
    """D2: Given a run that read ``ctx.session`` (anything: context, status, attributes), Then
    its attribute writes commit as the whole map under the session's version, whichever API
    wrote them; a run that wrote none commits no attributes."""
    ctx, pending = counter_context()
    assert ctx.session.version == 7
    ctx.set_attribute("counters", {"c": 5})
    assert pending.changes() == SessionChanges(READ_MODIFY_WRITE, attributes={"counters": {"c": 5}, "title": "t"})
    assert pending.changes().on_version
    replaced, replaced_pending = counter_context()
    replaced.set_attributes({"title": "u"})
    assert replaced_pending.changes().attributes == {"title": "u"}
    only_read, only_read_pending = counter_context()
    assert only_read.session.attributes["title"] == "t"
    assert only_read_pending.changes() == SessionChanges(READ_MODIFY_WRITE)  # under the version, no attributes


def test_attribute_writes_need_read_modify_write_and_a_session() -> None:
    with pytest.raises(ToolEffectViolation):
        counter_context(effect=APPEND_ONLY)[0].set_attribute("counters", {})
    assert counter_context(effect=READ_ONLY)[0].attribute("title") == "t"  # reading is always allowed
    no_session = ToolContext("alice", make_services(), effects=PendingChanges(READ_MODIFY_WRITE))
    with pytest.raises(ToolEffectViolation):
        no_session.attribute("counters")
    with pytest.raises(ToolEffectViolation):
        counter_context()[0].set_attribute("", 1)


def test_the_changes_of_a_run_say_what_its_effect_allows() -> None:
    """SessionChanges refuses what no store may commit: attributes outside read-modify-write,
    both conditions at once, a write not conditioned on the version it replaces."""
    assert SessionChanges(APPEND_ONLY, context_append=["a"]).context_append == ("a",)
    with pytest.raises(ValueError, match="version condition"):
        SessionChanges(APPEND_ONLY, attributes={"a": 1})
    with pytest.raises(ValueError, match="not both"):
        SessionChanges(attributes={"a": 1}, by_attribute=AttributeWrites(seen={"a": 0}))
    with pytest.raises(ValueError, match="conditioned"):
        SessionChanges(by_attribute=AttributeWrites(seen={}, values={"a": 1}))
    with pytest.raises(ValueError, match="changes nothing"):
        SessionChanges(READ_ONLY, context_append=["a"])
