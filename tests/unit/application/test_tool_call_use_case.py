"""The tool-call use case (load -> run -> commit -> emit) against an in-memory SessionRepository:
the port is all it needs; a lost race reruns the tool on the state read again; the throttle
classifier it is given decides which tool failures are answered as "retry shortly"."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.application.metrics import ERROR_TYPE, STORE_CONFLICTS, STORE_THROTTLES, TOOL, MetricsWriter
from mcp_platform.application.services import Services
from mcp_platform.application.sessions.changes import SessionChanges
from mcp_platform.application.sessions.errors import (
    SessionNotFound,
    StoreThrottled,
    TransactionConflict,
)
from mcp_platform.application.sessions.model import CommitResult, Session, ToolCall
from mcp_platform.application.sessions.ports import SessionRepository
from mcp_platform.application.sessions.retry import Backoff
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.context import ToolContext
from mcp_platform.protocol.jsonrpc import (
    CONFLICT,
    SESSION_NOT_FOUND,
    TOOL_FAILED,
    UNAVAILABLE,
    JsonRpcError,
    Request,
)
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.protocol.tools import tool
from mcp_platform.testing import InMemorySessions
from tests.support.services import make_services

SESSION_ID = "s" * 32


class MemorySessions(InMemorySessions):
    """The in-memory store tool authors test with (the DynamoDB store's commit rules), holding
    one given session, with a hook run before each commit: another writer racing the call."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.sessions[session.id] = session
        self.commits: list[ToolCall] = []
        self.before_commit: Callable[[], None] = lambda: None

    @property
    def session(self) -> Session:
        return self.sessions[SESSION_ID]

    @session.setter
    def session(self, session: Session) -> None:
        self.sessions[SESSION_ID] = session

    def commit(self, session: Session, record: ToolCall, changes: SessionChanges) -> CommitResult:
        self.before_commit()
        done = super().commit(session, record, changes)
        self.commits.append(record)
        return done


class Events:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def emit(self, event: ToolCallEvent) -> None:
        self.records.append(event.to_dict())


@tool(description="Adds one to the session's counter.", session="required", effect="read_modify_write")
async def bump(ctx: ToolContext) -> int:
    value: int = ctx.attribute("n", 0) + 1
    ctx.set_attribute("n", value)
    return value


def run_call(runner: ToolCallRunner, name: str = "bump") -> dict[str, Any]:
    call = RequestContext("alice", "2026-07-28", True)
    catalog = Catalog.of([bump, failing]).tools
    arguments = {"session": SESSION_ID} if name == "bump" else {}
    prepared = runner.prepare(Request("tools/call", {"name": name, "arguments": arguments}, 1), call, catalog)

    async def load_and_run() -> dict[str, Any]:
        return await runner.run(await runner.load(prepared, call), call)

    return asyncio.run(load_and_run())


def a_session() -> Session:
    return Session(id=SESSION_ID, owner="alice", status="active", version=1, ttl=4_000_000_000, attribute_versions={})


def test_a_call_is_loaded_run_committed_and_emitted_through_the_port() -> None:
    # Given a session in memory behind the port
    sessions = MemorySessions(a_session())
    repository: SessionRepository = sessions  # the fake is the port, structurally
    events = Events()
    runner = ToolCallRunner(Services(store=repository, deps=None), events)
    # When bump is called
    result = run_call(runner)
    # Then it ran once, committed its write, and its event names the call and its session
    assert result["structuredContent"] == {"result": 1} or result["content"][0]["text"] == "1"
    assert sessions.session.attributes == {"n": 1} and len(sessions.commits) == 1
    (event,) = events.records
    assert (event["event_id"], event["session_id"], event["tool"]) == (sessions.commits[0].id, SESSION_ID, "bump")


def test_a_lost_race_reruns_the_tool_on_the_state_read_again() -> None:
    # Given another writer that sets the counter to 10 just before this call's first commit
    sessions = MemorySessions(a_session())
    raced = [False]

    def other_writer() -> None:
        if not raced[0]:
            raced[0] = True
            sessions.session = replace(sessions.session, attributes={"n": 10}, attribute_versions={"n": 1}, version=2)

    sessions.before_commit = other_writer
    events = Events()
    runner = ToolCallRunner(
        Services(store=sessions, deps=None), events, rerun_backoff=Backoff(jitter=False, sleep=lambda _: None)
    )
    # When bump is called / Then it ran again on 10, committed 11 once, and emitted one event
    run_call(runner)
    assert sessions.session.attributes == {"n": 11} and len(sessions.commits) == 1
    assert len(events.records) == 1


class Throttled(Exception):
    """What some SDK raises when throttled (the use case does not know which)."""


@tool(description="Fails as a throttled AWS call would.")
async def failing(ctx: ToolContext) -> str:
    raise Throttled("slow down")


def is_throttled(exc: BaseException) -> bool:
    return isinstance(exc, Throttled)


@pytest.mark.parametrize(("classifier", "code"), [(None, TOOL_FAILED), (is_throttled, UNAVAILABLE)])
def test_the_injected_classifier_decides_what_is_a_throttle(
    classifier: Callable[[BaseException], bool] | None, code: int
) -> None:
    # Given a runner with or without the classifier the composition root passes
    runner = (
        ToolCallRunner(make_services())
        if classifier is None
        else ToolCallRunner(make_services(), is_throttle=classifier)
    )
    # When a tool fails with a throttle / Then only a runner that recognises it answers "retry shortly"
    with pytest.raises(JsonRpcError) as failed:
        run_call(runner, "failing")
    assert failed.value.code == code


def counted(stream: io.StringIO) -> list[tuple[str, str, str]]:
    """Each counter line the writer left: (metric, tool, error type)."""
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    return [
        (name, line[TOOL], line[ERROR_TYPE])
        for line in lines
        for name in (STORE_CONFLICTS, STORE_THROTTLES)
        if name in line
    ]


def counting_runner(sessions: MemorySessions, **options: Any) -> tuple[ToolCallRunner, io.StringIO]:
    stream = io.StringIO()
    metrics = MetricsWriter("McpPlatform", "mcp-endpoint", stream)
    backoff = Backoff(retries=2, jitter=False, sleep=lambda _: None)
    return ToolCallRunner(
        Services(store=sessions, deps=None), Events(), rerun_backoff=backoff, metrics=metrics, **options
    ), stream


def test_a_call_without_conflict_or_throttle_counts_nothing() -> None:
    # Given a runner that counts / When bump commits at its first attempt
    runner, stream = counting_runner(MemorySessions(a_session()))
    run_call(runner)
    # Then no counter line was written
    assert counted(stream) == []


def test_each_lost_race_counts_one_conflict_of_its_tool() -> None:
    # Given another writer that wins the race twice, then lets the call commit
    sessions = MemorySessions(a_session())
    races = [2]

    def other_writer() -> None:
        if races[0]:
            races[0] -= 1
            n = sessions.session.attributes.get("n", 0) + 10
            sessions.session = replace(sessions.session, attributes={"n": n}, attribute_versions={"n": n})

    sessions.before_commit = other_writer
    runner, stream = counting_runner(sessions)
    # When bump is called / Then it committed at its third run, and each rerun was counted once
    run_call(runner)
    assert sessions.session.attributes == {"n": 21}
    assert counted(stream) == [(STORE_CONFLICTS, "bump", "VersionConflict")] * 2
    line = json.loads(stream.getvalue().splitlines()[0])
    assert line["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"], ["service", TOOL]]
    assert line[STORE_CONFLICTS] == 1


def test_a_call_that_keeps_losing_counts_every_conflict_then_answers_conflict() -> None:
    # Given a writer that wins every race (the runner reruns twice at most)
    sessions = MemorySessions(a_session())

    def other_writer() -> None:
        n = sessions.session.attributes.get("n", 0) + 10
        sessions.session = replace(sessions.session, attributes={"n": n}, attribute_versions={"n": n})

    sessions.before_commit = other_writer
    runner, stream = counting_runner(sessions)
    # When bump is called / Then it is answered CONFLICT after three runs, each lost race counted
    with pytest.raises(JsonRpcError) as failed:
        run_call(runner)
    assert failed.value.code == CONFLICT
    assert counted(stream) == [(STORE_CONFLICTS, "bump", "VersionConflict")] * 3


@pytest.mark.parametrize(
    ("error", "counter", "code"),
    [
        (StoreThrottled("throttled through every retry"), STORE_THROTTLES, UNAVAILABLE),
        (TransactionConflict(6), STORE_CONFLICTS, UNAVAILABLE),
        (SessionNotFound(SESSION_ID), None, SESSION_NOT_FOUND),
    ],
)
def test_a_commit_the_store_refuses_counts_throttles_and_conflicts_only(
    error: Exception, counter: str | None, code: int
) -> None:
    # Given a store whose commit fails with ``error``
    sessions = MemorySessions(a_session())

    def refuse() -> None:
        raise error

    sessions.before_commit = refuse
    runner, stream = counting_runner(sessions)
    # When bump is called / Then it is answered by the error's code, counted once if a throttle or conflict
    with pytest.raises(JsonRpcError) as failed:
        run_call(runner)
    assert failed.value.code == code
    expected = [] if counter is None else [(counter, "bump", type(error).__name__)]
    assert counted(stream) == expected


@pytest.mark.parametrize("classifier", [None, is_throttled])
def test_a_tool_failure_counts_as_a_throttle_only_when_the_classifier_says_so(
    classifier: Callable[[BaseException], bool] | None,
) -> None:
    # Given a counting runner with or without the throttle classifier
    options = {} if classifier is None else {"is_throttle": classifier}
    runner, stream = counting_runner(MemorySessions(a_session()), **options)
    # When a tool fails with what the classifier calls a throttle
    with pytest.raises(JsonRpcError):
        run_call(runner, "failing")
    # Then it is counted as a throttle of that tool only when it was read as one
    assert counted(stream) == ([] if classifier is None else [(STORE_THROTTLES, "failing", "Throttled")])
