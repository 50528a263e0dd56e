"""The SessionRepository contract: what a tool call's commit means, whichever store holds the
sessions. Every case runs against the DynamoDB store (on moto) and against the in-memory store
of ``mcp_platform.testing``, which tool authors test with: both must agree, or a tool's tests
pass against semantics production does not have."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from mcp_platform.adapters.dynamodb.sessions import SessionStore
from mcp_platform.application.sessions.changes import AttributeWrites, ConditionCheck, ExtraPut, SessionChanges
from mcp_platform.application.sessions.commit_plan import DEFAULT_CONTEXT_BUDGET_BYTES, Budgets
from mcp_platform.application.sessions.errors import (
    CallRecordTooLarge,
    DuplicateToolCall,
    IdempotencyKeyReused,
    PreconditionFailed,
    SessionCapacityExceeded,
    SessionNotFound,
    VersionConflict,
)
from mcp_platform.application.sessions.model import Session, ToolCall
from mcp_platform.application.sessions.retry import Backoff
from mcp_platform.config import CONTEXT_IN_ITEMS, CONTEXT_IN_LIST
from mcp_platform.protocol.clock import ManualClock, iso_utc
from mcp_platform.protocol.tools import APPEND_ONLY
from mcp_platform.testing import InMemorySessions
from tests.support.tables import create_session_table

T0 = 1_800_000_000.0
Repository = Any  # the SessionRepository port, and create_session of both stores
MakeRepository = Callable[..., Repository]


class OneRequestAtATime:
    """A DynamoDB client whose requests moto serves one at a time: DynamoDB applies each request
    atomically, moto in the test's process does not when threads call it together."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.meta = inner, inner.meta
        self.lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        operation = getattr(self.inner, name)

        def serially(**params: Any) -> Any:
            with self.lock:
                return operation(**params)

        return serially


@pytest.fixture(params=["dynamodb", "memory"])
def make_repository(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[MakeRepository]:
    """A factory of one kind of store (``context_budget_bytes``: a smaller context budget;
    ``context_layout``: where appends go)."""
    if request.param == "memory":

        def memory(
            context_budget_bytes: int = DEFAULT_CONTEXT_BUDGET_BYTES, context_layout: str = CONTEXT_IN_ITEMS
        ) -> Repository:
            return InMemorySessions(
                clock, budgets=Budgets(context_bytes=context_budget_bytes), context_layout=context_layout
            )

        yield memory
        return
    request.getfixturevalue("aws_env")
    with mock_aws():
        raw = boto3.client("dynamodb", region_name="us-east-1")
        table = f"sessions-{uuid.uuid4().hex[:8]}"
        create_session_table(raw, table)
        client = OneRequestAtATime(raw)
        backoff = Backoff(jitter=False, sleep=lambda _: None)

        def dynamodb(**options: Any) -> Repository:
            return SessionStore(table, client=client, clock=clock, backoff=backoff, **options)

        yield dynamodb


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def repo(make_repository: MakeRepository) -> Repository:
    return make_repository()


def call(call_id: str, *, started_at: float = T0, result: Any = None, request_hash: str = "") -> ToolCall:
    result = {"content": [{"type": "text", "text": call_id}]} if result is None else result
    return ToolCall(
        call_id,
        "a_tool",
        {"text": call_id},
        result,
        started_at=started_at,
        finished_at=started_at + 0.5,
        request_hash=request_hash or f"hash-{call_id}",
    )


def fresh(call_id: str, *, result: Any = None) -> ToolCall:
    """A call under a fresh id (a 2026 call without an idempotency key): no retry can carry it."""
    return replace(call(call_id, result=result), replayable=False)


def unchanged(repo: Repository, before: Session, *call_ids: str) -> None:
    """Nothing of a refused commit is stored: same version and context, no record, no marker."""
    now = repo.get_session(before.id, consistent=True)
    assert (now.version, now.context, now.attributes) == (before.version, before.context, before.attributes)
    assert now.tool_calls == before.tool_calls
    recorded = {r.tool_call_id for r in repo.list_tool_calls(before.id, consistent=True).records}
    for call_id in call_ids:
        assert call_id not in recorded
        assert repo.load_for_tool_call(before.id, call_id, owner=before.owner)[1] is None


# -- effects: append-only, read-modify-write ---------------------------------------------------


def test_parallel_append_only_calls_never_conflict(repo: Repository) -> None:
    """Append-only calls carry no version condition: eight calls that all hold the session as
    it was before any of them committed (running in parallel, in threads) all commit, and the
    stored session counts each of them once."""
    held = repo.create_session("alice")
    failures: list[BaseException] = []

    def append(i: int) -> None:
        try:
            repo.commit(held, call(f"c{i}"), SessionChanges(APPEND_ONLY, context_append=[{"n": i}]))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=append, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    stored = repo.get_session(held.id, consistent=True)
    assert stored.version == held.version + 8 and stored.tool_calls == 8
    assert sorted(entry["n"] for entry in stored.context) == list(range(8))


def test_an_append_only_commit_from_a_stale_copy_is_a_lower_bound(repo: Repository) -> None:
    held = repo.create_session("alice")
    repo.commit(held, call("first"), SessionChanges(APPEND_ONLY, context_append=["a"]))
    done = repo.commit(held, call("second"), SessionChanges(APPEND_ONLY, context_append=["b"]))
    assert done.exact is False and done.session.version == held.version + 1  # the stored one is + 2
    assert repo.get_session(held.id, consistent=True).context == ["a", "b"]


def test_an_append_only_commit_needs_the_session_alive(repo: Repository, clock: ManualClock) -> None:
    """Never conflicting is not "always committing": an ended or expired session refuses it."""
    held = repo.create_session("alice")
    repo.end_session(held.id)
    with pytest.raises(SessionNotFound):
        repo.commit(held, call("after-end"), SessionChanges(APPEND_ONLY, context_append=["a"]))
    other = repo.create_session("alice")
    clock.advance(7200)
    with pytest.raises(SessionNotFound):
        repo.commit(other, call("after-expiry"), SessionChanges(APPEND_ONLY, context_append=["a"]))


def test_a_read_modify_write_commit_from_a_stale_version_conflicts(repo: Repository) -> None:
    """D2: a commit conditioned on the session's version loses to any commit made since it was
    read, an append too; the error carries the state that won, and nothing of it is stored."""
    held = repo.create_session("alice", attributes={"n": 1})
    repo.commit(held, call("append"), SessionChanges(APPEND_ONLY, context_append=["a"]))
    current = repo.get_session(held.id, consistent=True)
    with pytest.raises(VersionConflict) as conflict:
        repo.commit(held, call("rmw"), SessionChanges(attributes={"n": 2}))
    assert conflict.value.current is not None and conflict.value.current.version == current.version
    unchanged(repo, current, "rmw")
    done = repo.commit(conflict.value.current, call("rmw"), SessionChanges(attributes={"n": 2}))
    assert done.exact and done.session.version == current.version + 1
    assert repo.get_session(held.id, consistent=True).attributes == {"n": 2}


def test_a_commit_conditioned_on_attributes_conflicts_only_with_writes_to_them(repo: Repository) -> None:
    """D2 per attribute: a run that read ``counters`` at version v commits past appends and
    writes to other attributes, and loses (VersionConflict naming it) once ``counters`` changed."""
    held = repo.create_session("alice", attributes={"title": "t"})
    repo.commit(held, call("append"), SessionChanges(APPEND_ONLY, context_append=["a"]))
    repo.commit(
        held, call("title"), SessionChanges(by_attribute=AttributeWrites(seen={"title": 0}, values={"title": "u"}))
    )
    seen = {"counters": held.attribute_version("counters")}
    done = repo.commit(
        held, call("inc-1"), SessionChanges(by_attribute=AttributeWrites(seen=seen, values={"counters": 1}))
    )
    assert done.session.attribute_version("counters") == 1
    before = repo.get_session(held.id, consistent=True)
    with pytest.raises(VersionConflict) as conflict:
        repo.commit(
            held, call("inc-2"), SessionChanges(by_attribute=AttributeWrites(seen=seen, values={"counters": 1}))
        )
    assert conflict.value.attributes == ("counters",)
    unchanged(repo, before, "inc-2")
    stored = repo.get_session(held.id, consistent=True)
    assert stored.attributes == {"title": "u", "counters": 1}
    assert stored.attribute_versions == {"title": 1, "counters": 1}


# -- the tool's own items: extra puts and condition checks --------------------------------------


def test_an_extra_put_if_absent_fails_on_an_existing_item_naming_its_label(repo: Repository) -> None:
    """D10: the tool's claim on an item is written with the call, and a second claim on it is
    PreconditionFailed naming the claim; the refused call commits nothing at all."""
    held = repo.create_session("alice")
    claim = ExtraPut({"pk": "resource#r1", "sk": "owner", "by": "alice"}, if_absent=True, label="claim")
    done = repo.commit(held, call("c1"), SessionChanges(extra_puts=[claim]))
    with pytest.raises(PreconditionFailed) as failed:
        repo.commit(done.session, call("c2"), SessionChanges(context_append=["x"], extra_puts=[claim]))
    assert failed.value.label == "claim"
    unchanged(repo, repo.get_session(held.id, consistent=True), "c2")


def test_an_extra_put_with_expected_values_replaces_only_that_item(repo: Repository) -> None:
    held = repo.create_session("alice")
    first = repo.commit(
        held, call("c1"), SessionChanges(extra_puts=[ExtraPut({"pk": "r#1", "sk": "x", "by": "alice"})])
    )
    stale = ExtraPut({"pk": "r#1", "sk": "x", "by": "carol"}, expect={"by": "bob"}, label="handover")
    with pytest.raises(PreconditionFailed, match="handover") as failed:
        repo.commit(first.session, call("c2"), SessionChanges(extra_puts=[stale]))
    assert failed.value.label == "handover"
    unchanged(repo, repo.get_session(held.id, consistent=True), "c2")
    missing = ExtraPut({"pk": "r#2", "sk": "x", "by": "carol"}, expect={"by": "alice"}, label="nothing to hand over")
    with pytest.raises(PreconditionFailed, match="nothing to hand over"):
        repo.commit(first.session, call("c3"), SessionChanges(extra_puts=[missing]))
    handover = ExtraPut({"pk": "r#1", "sk": "x", "by": "carol"}, expect={"by": "alice"}, label="handover")
    second = repo.commit(first.session, call("c4"), SessionChanges(extra_puts=[handover]))
    # what was written is what the next condition sees
    check = ConditionCheck({"pk": "r#1", "sk": "x"}, expect={"by": "carol"}, label="carol holds it")
    repo.commit(second.session, call("c5"), SessionChanges(condition_checks=[check]))


def test_condition_checks_fail_naming_their_label_and_commit_nothing(repo: Repository) -> None:
    held = repo.create_session("alice")
    quota = {"pk": "quota#alice", "sk": "q"}
    with pytest.raises(PreconditionFailed) as failed:
        repo.commit(held, call("c0"), SessionChanges(condition_checks=[ConditionCheck(quota, label="quota")]))
    assert failed.value.label == "quota"
    unchanged(repo, held, "c0")
    done = repo.commit(held, call("c1"), SessionChanges(extra_puts=[ExtraPut({**quota, "left": 3}, if_absent=True)]))
    session = repo.commit(
        done.session, call("c2"), SessionChanges(condition_checks=[ConditionCheck(quota, expect={"left": 3})])
    )
    refused = (ConditionCheck(quota, exists=False, label="no quota"), ConditionCheck(quota, expect={"left": 2}))
    for i, check in enumerate(refused):
        before = repo.get_session(held.id, consistent=True)
        with pytest.raises(PreconditionFailed) as failed:
            repo.commit(session.session, call(f"c-{i}"), SessionChanges(context_append=["x"], condition_checks=[check]))
        assert failed.value.label == (check.label or "condition_checks[0]")
        unchanged(repo, before, f"c-{i}")
    absent = ConditionCheck({"pk": "quota#bob", "sk": "q"}, exists=False)
    repo.commit(session.session, call("c3"), SessionChanges(condition_checks=[absent]))


def test_a_failed_precondition_writes_none_of_the_calls_other_items(repo: Repository) -> None:
    held = repo.create_session("alice")
    claim = ExtraPut({"pk": "r#1", "sk": "x"}, if_absent=True, label="claim")
    with pytest.raises(PreconditionFailed):
        repo.commit(
            held,
            call("c1"),
            SessionChanges(extra_puts=[claim], condition_checks=[ConditionCheck({"pk": "q", "sk": "q"})]),
        )
    repo.commit(held, call("c2"), SessionChanges(extra_puts=[claim]))  # the claim of c1 was never written


# -- idempotency ----------------------------------------------------------------------------


def test_a_duplicate_tool_call_id_is_the_original_result_or_a_reused_key(repo: Repository) -> None:
    """D4: an id committed already is DuplicateToolCall carrying the original result (the same
    request), IdempotencyKeyReused for another request; neither commits anything. The load
    before a run answers the same way."""
    held = repo.create_session("alice")
    first = repo.commit(held, call("k", result={"n": 1}, request_hash="digest-a"), SessionChanges(context_append=["a"]))
    after = repo.get_session(held.id, consistent=True)
    with pytest.raises(DuplicateToolCall) as duplicate:
        repo.commit(
            first.session, call("k", result={"n": 2}, request_hash="digest-a"), SessionChanges(context_append=["b"])
        )
    assert duplicate.value.original.result == {"n": 1} == first.result.result
    with pytest.raises(IdempotencyKeyReused):
        repo.commit(
            first.session, call("k", result={"n": 3}, request_hash="digest-b"), SessionChanges(context_append=["c"])
        )
    now = repo.get_session(held.id, consistent=True)
    assert (now.version, now.context, now.tool_calls) == (after.version, after.context, after.tool_calls)
    assert [r.tool_call_id for r in repo.list_tool_calls(held.id, consistent=True).records] == ["k"]
    _, prior = repo.load_for_tool_call(held.id, "k", owner="alice", request_hash="digest-a")
    assert prior is not None and prior.result == {"n": 1}
    with pytest.raises(IdempotencyKeyReused):
        repo.load_for_tool_call(held.id, "k", owner="alice", request_hash="digest-b")


def test_a_call_under_a_fresh_id_commits_without_a_marker_and_is_never_a_replay(repo: Repository) -> None:
    """D4 as amended: a call whose id no retry can carry has nothing to replay, so its commit
    writes no marker: its record (listed like any other) holds its result, the load does not
    look for a marker, and none is found under its id."""
    held = repo.create_session("alice")
    done = repo.commit(held, fresh("f1", result={"n": 1}), SessionChanges(APPEND_ONLY, context_append=["a"]))
    assert done.result.result == {"n": 1} and done.result.tool_call_id == "f1"
    (record,) = repo.list_tool_calls(held.id, consistent=True).records
    assert (record.tool_call_id, record.result_sk) == ("f1", "") and record.result_bytes > 0
    assert record.sk == done.result.record_sk
    session, prior = repo.load_for_tool_call(held.id, None, owner="alice")
    assert prior is None and session.context == ["a"] and session.tool_calls == 1
    assert repo.load_for_tool_call(held.id, "f1", owner="alice")[1] is None


def test_a_commit_under_a_fresh_id_is_refused_by_the_same_rules(repo: Repository) -> None:
    """Without a marker the commit's parts sit one position earlier: a stale version is still
    VersionConflict, a failed extra put or condition check PreconditionFailed naming its label,
    an ended session SessionNotFound, and nothing of a refused commit is stored."""
    held = repo.create_session("alice", attributes={"n": 1})
    repo.commit(held, fresh("a1"), SessionChanges(APPEND_ONLY, context_append=["a"]))
    current = repo.get_session(held.id, consistent=True)
    with pytest.raises(VersionConflict) as conflict:
        repo.commit(held, fresh("rmw"), SessionChanges(attributes={"n": 2}))
    assert conflict.value.current is not None and conflict.value.current.version == current.version
    claim = ExtraPut({"pk": "resource#r1", "sk": "owner", "by": "alice"}, if_absent=True, label="claim")
    repo.commit(current, fresh("c1"), SessionChanges(extra_puts=[claim]))
    now = repo.get_session(held.id, consistent=True)
    with pytest.raises(PreconditionFailed) as failed:
        repo.commit(now, fresh("c2"), SessionChanges(context_append=["x"], extra_puts=[claim]))
    assert failed.value.label == "claim"
    quota = ConditionCheck({"pk": "quota#alice", "sk": "q"}, label="quota")
    with pytest.raises(PreconditionFailed) as failed:
        repo.commit(now, fresh("c3"), SessionChanges(context_append=["y"], condition_checks=[quota]))
    assert failed.value.label == "quota"
    unchanged(repo, now, "rmw", "c2", "c3")
    repo.end_session(held.id, owner="alice")
    with pytest.raises(SessionNotFound):
        repo.commit(now, fresh("late"), SessionChanges(APPEND_ONLY, context_append=["z"]))


# -- budgets ------------------------------------------------------------------------------------


def test_the_context_budget_refuses_the_append_that_would_pass_it(make_repository: MakeRepository) -> None:
    repo = make_repository(context_budget_bytes=2048)
    held = repo.create_session("alice")
    note = "n" * 400
    for i in range(4):
        repo.commit(held, call(f"c{i}"), SessionChanges(APPEND_ONLY, context_append=[note]))
    before = repo.get_session(held.id, consistent=True)
    with pytest.raises(SessionCapacityExceeded, match="context budget of 2048 bytes"):
        repo.commit(held, call("c4"), SessionChanges(APPEND_ONLY, context_append=[note, note]))
    unchanged(repo, before, "c4")
    with pytest.raises(SessionCapacityExceeded, match="needs"):
        repo.commit(held, call("c5"), SessionChanges(APPEND_ONLY, context_append=["x" * 3000]))


def test_the_attributes_budget_and_the_call_record_budget(repo: Repository) -> None:
    held = repo.create_session("alice")
    with pytest.raises(SessionCapacityExceeded, match="attributes"):
        repo.commit(held, call("big"), SessionChanges(attributes={"blob": "x" * 70_000}))
    with pytest.raises(SessionCapacityExceeded, match="attributes"):
        blob = AttributeWrites(seen={"blob": 0}, values={"blob": "x" * 70_000})
        repo.commit(held, call("big-2"), SessionChanges(by_attribute=blob))
    with pytest.raises(CallRecordTooLarge):
        repo.commit(held, call("huge", result={"text": "x" * 140_000}), SessionChanges())
    unchanged(repo, held, "big", "big-2", "huge")


# -- the record ---------------------------------------------------------------------------------


def test_the_record_and_its_sort_key_read_back_in_time_order(repo: Repository) -> None:
    """D1: a call's record is keyed ``tool#<ISO8601 start>#<id>``; list_tool_calls returns the
    records in that order (not the order of the commits), paged by a cursor."""
    held = repo.create_session("alice")
    late = repo.commit(held, call("late", started_at=T0 + 5), SessionChanges(APPEND_ONLY)).result
    early = repo.commit(held, call("early", started_at=T0 + 1), SessionChanges(APPEND_ONLY)).result
    first = repo.list_tool_calls(held.id, limit=1, consistent=True)
    (record,) = first.records
    assert record.tool_call_id == "early" and record.sk == f"tool#{iso_utc(T0 + 1)}#early" == early.record_sk
    assert (record.started_at, record.finished_at) == (iso_utc(T0 + 1), iso_utc(T0 + 1.5))
    assert record.tool_name == "a_tool" and record.arguments == {"text": "early"} and record.is_error is False
    assert record.result_sk == "toolcall#early" and record.result_bytes > 0
    assert first.next_cursor is not None
    second = repo.list_tool_calls(held.id, limit=1, cursor=first.next_cursor, consistent=True)
    assert [r.sk for r in second.records] == [late.record_sk] == [f"tool#{iso_utc(T0 + 5)}#late"]
    assert late.committed_at == iso_utc(T0)


# -- the context's layout (D1/D3 as amended): items of their own, read after a legacy list -----


def _session_with_legacy_context(repo: Repository, entries: list[Any]) -> Session:
    """A session whose context an earlier version kept in the metadata item itself (a list,
    with its size in ``context_bytes``); in memory, a session seeded with that context."""
    if isinstance(repo, InMemorySessions):
        return repo.create_session("alice", context=entries)
    session = repo.create_session("alice")
    repo.gateway.call(
        "update_item",
        TableName=repo.table_name,
        Key={"pk": {"S": f"session#{session.id}"}, "sk": {"S": "metadata"}},
        UpdateExpression="SET #ctx = :ctx, #cb = :cb",
        ExpressionAttributeNames={"#ctx": "context", "#cb": "context_bytes"},
        ExpressionAttributeValues={":ctx": {"L": [{"S": e} for e in entries]}, ":cb": {"N": str(2 * len(entries))}},
    )
    return repo.get_session(session.id, consistent=True)


def test_a_context_kept_in_the_metadata_by_an_earlier_version_reads_first_then_the_appends(
    repo: Repository, clock: ManualClock
) -> None:
    """Given a session whose context an earlier version kept in its metadata item, When calls
    append to it, Then its context reads as the old list, then the appended entries in order;
    loaded for an append-only call (no context items read), it shows the old list alone."""
    held = _session_with_legacy_context(repo, ["o1", "o2"])
    assert held.context == ["o1", "o2"]
    repo.commit(held, call("first"), SessionChanges(APPEND_ONLY, context_append=["a"]))
    clock.advance(0.001)
    done = repo.commit(held, call("second"), SessionChanges(APPEND_ONLY, context_append=["b", "c"]))
    assert done.session.context == ["o1", "o2", "b", "c"]  # what the held state and this call tell
    assert repo.get_session(held.id, consistent=True).context == ["o1", "o2", "a", "b", "c"]
    loaded, _ = repo.load_for_tool_call(held.id, "next", owner="alice")
    assert loaded.context == ["o1", "o2", "a", "b", "c"]
    bare, _ = repo.load_for_tool_call(held.id, "next", owner="alice", with_context=False)
    assert bare.context == ["o1", "o2"] and bare.version == loaded.version == held.version + 2


def test_the_context_reads_in_the_order_of_its_writes_and_is_left_unread_for_an_append_only_call(
    repo: Repository, clock: ManualClock
) -> None:
    """Given appends at successive instants, When the session is read, Then its context is the
    entries in the order of the writes; without its context (an append-only call's load), none."""
    held = repo.create_session("alice")
    for i, entries in enumerate((["a"], ["b", "c"], ["d"])):
        clock.advance(0.001)
        repo.commit(held, call(f"z{3 - i}"), SessionChanges(APPEND_ONLY, context_append=entries))
    assert repo.get_session(held.id, consistent=True).context == ["a", "b", "c", "d"]
    assert repo.load_for_tool_call(held.id, "next", owner="alice", with_context=False)[0].context == []


def test_update_metadata_never_rewrites_the_context(repo: Repository) -> None:
    """Given a session with a context, When update_metadata's change rewrites the context, Then
    it is refused (the context grows by appends only) and nothing is written."""
    held = repo.create_session("alice")
    repo.commit(held, call("c1"), SessionChanges(APPEND_ONLY, context_append=["a"]))
    before = repo.get_session(held.id, consistent=True)
    with pytest.raises(ValueError, match="context"):
        repo.update_metadata(held.id, lambda s: replace(s, context=["rewritten"]))
    unchanged(repo, before)


def test_the_list_layout_keeps_appends_where_the_previous_release_reads_them(
    make_repository: MakeRepository, clock: ManualClock
) -> None:
    """Given a store writing the list layout (``compatible_with=0.1``: what a deployment writes
    while a release from before the context items may still serve), When calls append,
    Then every entry is in the metadata item itself (a session loaded without its context items
    shows them all, as that release reads it), in order; and once the store writes items again,
    the session reads the list, then the items."""
    listing = make_repository(context_layout=CONTEXT_IN_LIST)
    held = listing.create_session("alice")
    listing.commit(held, call("l1"), SessionChanges(APPEND_ONLY, context_append=["a"]))
    clock.advance(0.001)
    listing.commit(held, call("l2"), SessionChanges(APPEND_ONLY, context_append=["b", "c"]))
    bare, _ = listing.load_for_tool_call(held.id, "next", owner="alice", with_context=False)
    assert bare.context == ["a", "b", "c"]
    if isinstance(listing, InMemorySessions):  # the same store, now writing items
        listing.context_layout = CONTEXT_IN_ITEMS
        itemizing = listing
    else:
        itemizing = make_repository()
    clock.advance(0.001)
    itemizing.commit(held, call("i1"), SessionChanges(APPEND_ONLY, context_append=["d"]))
    assert itemizing.get_session(held.id, consistent=True).context == ["a", "b", "c", "d"]
    assert itemizing.load_for_tool_call(held.id, "next", owner="alice", with_context=False)[0].context == [
        "a",
        "b",
        "c",
    ]
