"""Parallel tool calls on one session, over HTTP, spread over two instances on one emulator.

Seed 003: "an agent fires three tools concurrently in the same session". Each test that proves
a race or a fault is handled has a control beside it that runs the same scenario against the
naive commit and shows the same assertions fail.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import httpx
import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.adapters.dynamodb.sessions import SessionChanges, SessionStore, VersionConflict
from mcp_platform.application.sessions.changes import PendingChanges
from mcp_platform.application.sessions.retry import Backoff
from mcp_platform.application.tool_calls import ToolCallRunner
from mcp_platform.protocol.jsonrpc import CONFLICT, INVALID_PARAMS, TOOL_FAILED, UNAVAILABLE, JsonRpcError
from mcp_platform.protocol.tools import READ_MODIFY_WRITE, error_result, to_result
from mcp_platform.protocol.versions import IDEMPOTENCY_KEY_META
from tests.support import fault_tools
from tests.support.endpoint import AwsStack, Instance, endpoint_instance, fresh_stack
from tests.support.fault_tools import flaky
from tests.support.faults import TransactionConflicts
from tests.support.mcp_http import CAPS_META, MODERN, call, final_message, headers, initialize, modern_call

pytestmark = pytest.mark.integration

ToolCallSpec = tuple[str, dict[str, Any]]


# A fresh emulator per test: moto's transaction cost grows with the table's size.
aws = pytest.fixture(fresh_stack, name="aws")


@pytest.fixture()
def api_key(aws: AwsStack) -> str:
    return ApiKeyStore(aws.table, aws.client("dynamodb")).mint("alice")


@pytest.fixture()
def pair(aws: AwsStack) -> Iterator[tuple[Instance, Instance]]:
    with (
        endpoint_instance(aws, extra_tools=(fault_tools,)) as a,
        endpoint_instance(aws, extra_tools=(fault_tools,)) as b,
    ):
        yield a, b


def tool(
    url: str, key: str, request_id: int, name: str, arguments: dict[str, Any], timeout: float = 30, **meta: Any
) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": {**CAPS_META, **meta}}
    return final_message(modern_call(url, key, request_id, "tools/call", params, timeout))


def structured(response: dict[str, Any]) -> dict[str, Any]:
    assert "result" in response and not response["result"]["isError"], response
    found: dict[str, Any] = response["result"]["structuredContent"]
    return found


def open_handle(url: str, key: str) -> str:
    return str(structured(tool(url, key, 1, "open_session", {}))["session"])


def fan_out(
    instances: Sequence[Instance], key: str, calls: Sequence[ToolCallSpec], timeout: float = 30, **meta: Any
) -> list[dict[str, Any]]:
    """Every call at once, each a distinct request, call i on instance i % len(instances)."""

    def send(indexed: tuple[int, ToolCallSpec]) -> dict[str, Any]:
        i, (name, arguments) = indexed
        return tool(instances[i % len(instances)].url, key, 100 + i, name, arguments, timeout, **meta)

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(send, enumerate(calls)))


def failures(responses: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in responses if "error" in r or r["result"].get("isError")]


def session_info(url: str, key: str, handle: str) -> dict[str, Any]:
    return structured(tool(url, key, 2, "session_info", {"session": handle}))


def assert_appends_committed(
    pair: tuple[Instance, Instance], key: str, handle: str, texts: list[str], version_before: int
) -> None:
    responses = fan_out(pair, key, [("append_note", {"session": handle, "text": t}) for t in texts])
    failed = failures(responses)
    assert not failed, f"{len(failed)} of {len(texts)} calls failed, e.g. {failed[0]}"
    notes = structured(tool(pair[1].url, key, 3, "read_notes", {"session": handle, "limit": 1000}))["notes"]
    assert sorted(n["text"] for n in notes) == sorted(texts)  # every note, each exactly once
    assert session_info(pair[0].url, key, handle)["version"] == version_before + len(texts)


def test_d3_64_parallel_appends_over_two_instances_all_commit_exactly_once(
    pair: tuple[Instance, Instance], api_key: str
) -> None:
    """D3/D10: Given one application session, When 64 append_note calls run at once over two
    instances, Then all 64 succeed, 64 notes are stored once each and the version grew by 64."""
    handle = open_handle(pair[0].url, api_key)
    before = session_info(pair[0].url, api_key, handle)["version"]
    assert_appends_committed(pair, api_key, handle, [f"note {i}" for i in range(64)], before)


def test_control_version_conditioned_appends_fail_the_same_test(
    pair: tuple[Instance, Instance], api_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control: the same 64 appends committed under the version condition (the naive commit)
    mostly fail, so the test above can detect the defect."""
    original = SessionStore.commit

    def versioned(self: SessionStore, session: Any, record: Any, changes: SessionChanges) -> Any:
        return original(self, session, record, replace(changes, effect=READ_MODIFY_WRITE))

    monkeypatch.setattr(SessionStore, "commit", versioned)
    handle = open_handle(pair[0].url, api_key)
    before = session_info(pair[0].url, api_key, handle)["version"]
    with pytest.raises(AssertionError, match="calls failed"):
        assert_appends_committed(pair, api_key, handle, [f"note {i}" for i in range(64)], before)


def test_8_parallel_distinct_calls_on_a_2025_transport_session_all_succeed(
    pair: tuple[Instance, Instance], api_key: str
) -> None:
    """2025 era, the transport session as the session: 3 appends, 2 reads, 1 info and 2
    increments at once over two instances: every call succeeds, nothing is lost."""
    session_id = initialize(pair[0].url, api_key)
    calls: list[ToolCallSpec] = [
        *[("append_note", {"text": f"n{i}"}) for i in range(3)],
        ("read_notes", {}),
        ("read_notes", {"limit": 2}),
        ("session_info", {}),
        *[("increment_counter", {"name": "c"}) for _ in range(2)],
    ]

    def send(indexed: tuple[int, ToolCallSpec]) -> dict[str, Any]:
        i, (name, arguments) = indexed
        response = call(
            pair[i % 2].url, api_key, session_id, 10 + i, "tools/call", {"name": name, "arguments": arguments}
        )
        return final_message(response)

    with ThreadPoolExecutor(len(calls)) as pool:
        responses = list(pool.map(send, enumerate(calls)))
    assert not failures(responses), failures(responses)
    assert sorted(structured(r)["value"] for r in responses[-2:]) == [1, 2]
    final = final_message(call(pair[1].url, api_key, session_id, 99, "tools/call", {"name": "read_notes"}))
    assert sorted(n["text"] for n in structured(final)["notes"]) == ["n0", "n1", "n2"]


def assert_increments_exact(pair: tuple[Instance, Instance], key: str, handle: str, count: int) -> None:
    responses = fan_out(pair, key, [("increment_counter", {"session": handle, "name": "hits"})] * count)
    failed = failures(responses)
    assert not failed, f"{len(failed)} of {count} calls failed, e.g. {failed[0]}"
    answers = sorted(structured(r)["value"] for r in responses)
    assert answers == list(range(1, count + 1)), f"stale answers committed: {answers}"
    final = structured(tool(pair[1].url, key, 4, "increment_counter", {"session": handle, "name": "hits", "by": 0}))
    assert final["value"] == count


def test_d2_32_parallel_read_modify_write_calls_each_commit_what_they_answer(
    pair: tuple[Instance, Instance], api_key: str
) -> None:
    """D2: Given a counter in session attributes, When 32 increments run at once over two
    instances, Then the counter is 32 and the answers are exactly 1..32: a call that lost the
    version race ran again on the fresh state instead of committing a stale result."""
    handle = open_handle(pair[0].url, api_key)
    assert_increments_exact(pair, api_key, handle, 32)


@pytest.fixture()
def trio(aws: AwsStack) -> Iterator[tuple[Instance, Instance, Instance]]:
    """Three instances whose streams may last 120 s: on the emulator (one request at a time) a
    burst of 352 calls takes tens of seconds, and the test is about conflicts, not that cap."""
    with (
        endpoint_instance(aws, MCP_STREAM_MAX_SECONDS="120") as a,
        endpoint_instance(aws, MCP_STREAM_MAX_SECONDS="120") as b,
        endpoint_instance(aws, MCP_STREAM_MAX_SECONDS="120") as c,
    ):
        yield a, b, c


def mixed_burst(handle: str, blocks: int = 16) -> list[ToolCallSpec]:
    """Per block 16 appends, 3 increments of one counter and 3 reads, interleaved: with 16 blocks
    256 append_note, 48 increment_counter and 48 read_notes."""
    calls: list[ToolCallSpec] = []
    for block in range(blocks):
        calls += [("append_note", {"session": handle, "text": f"note {block}.{i}"}) for i in range(16)]
        calls += [("increment_counter", {"session": handle, "name": "hits"})] * 3
        calls += [("read_notes", {"session": handle, "limit": 5})] * 3
    return calls


@pytest.mark.slow
def test_d2_increments_amid_a_burst_of_appends_over_three_instances_never_conflict_with_them(
    trio: tuple[Instance, Instance, Instance], api_key: str
) -> None:
    """D2/D3 (README, effects): Given one session, When 256 append_note, 48 increment_counter and
    48 read_notes run at once over three instances, Then every call succeeds: an increment
    commits under the version of the attribute it read (its counter), which appends never
    touch, so they never force it to run again; the increments answer exactly 1..48 (no lost
    update), every note is stored once, and the session's version grew by one per commit."""
    handle = open_handle(trio[0].url, api_key)
    before = session_info(trio[0].url, api_key, handle)["version"]
    calls = mixed_burst(handle)
    responses = fan_out(trio, api_key, calls, timeout=120)  # the emulator serves one request at a time
    failed = [
        (name, r.get("error", {}).get("message"))
        for r, (name, _) in zip(responses, calls, strict=True)
        if failures([r])
    ]
    assert not failed, f"{len(failed)} of {len(calls)} calls failed: {sorted(set(failed))}, {len(failed)} in all"
    answers = sorted(
        structured(r)["value"] for r, (name, _) in zip(responses, calls, strict=True) if name == "increment_counter"
    )
    assert answers == list(range(1, 49)), f"lost or stale increments: {answers}"
    notes = structured(tool(trio[1].url, api_key, 3, "read_notes", {"session": handle, "limit": 1000}))["notes"]
    assert sorted(n["text"] for n in notes) == sorted(a["text"] for name, a in calls if name == "append_note")
    assert session_info(trio[2].url, api_key, handle)["version"] == before + 256 + 48


class WriteBeforeCommit:
    """Before the first commit of a session-attribute write (an increment) on this client, runs
    ``meanwhile``: another writer's commit lands between the call's read and its commit, as it
    does when calls run in parallel, but every time, in that order."""

    def __init__(self, client: Any, meanwhile: Callable[[], None]) -> None:
        self.meanwhile = meanwhile
        self.fired = 0
        client.meta.events.register("before-parameter-build.dynamodb.TransactWriteItems", self)

    def __call__(self, params: dict[str, Any], **_: Any) -> None:
        (update,) = [action["Update"] for action in params["TransactItems"] if "Update" in action]
        if ts.ATTRIBUTES in update["ExpressionAttributeNames"].values() and not self.fired:
            self.fired += 1
            self.meanwhile()


def retitle(store: SessionStore, handle: str) -> None:
    store.update_metadata(handle, lambda s: replace(s, attributes={**s.attributes, "title": "renamed"}))


@pytest.mark.parametrize(
    ("meanwhile", "runs", "value"),
    [
        pytest.param(
            lambda url, key, handle, store: tool(url, key, 9, "append_note", {"session": handle, "text": "x"}),
            1,
            1,
            id="an append",
        ),
        pytest.param(lambda url, key, handle, store: retitle(store, handle), 1, 1, id="another attribute"),
        pytest.param(
            lambda url, key, handle, store: tool(url, key, 9, "increment_counter", {"session": handle, "name": "hits"}),
            2,
            2,
            id="the same counter",
        ),
    ],
)
def test_d2_an_increment_runs_again_only_when_what_it_read_changed_before_its_commit(
    aws: AwsStack, api_key: str, meanwhile: Callable[[str, str, str, SessionStore], Any], runs: int, value: int
) -> None:
    """D2 (README, effects): Given an increment whose commit is preceded, after its read, by
    another writer's commit on the same session, Then it runs again only when that write
    touched what it read: an append (context, version) or another attribute changes nothing it
    read, so it commits on its first run (one BatchGetItem, one TransactWriteItems); another
    increment of its counter makes it run again on the fresh state (a consistent read, then a
    second transaction) and answer 2."""
    store = SessionStore(aws.table, client=aws.client("dynamodb"))
    dynamodb = aws.client("dynamodb")
    with endpoint_instance(aws) as other, endpoint_instance(aws, dynamodb=dynamodb) as racing:
        handle = open_handle(other.url, api_key)
        version = store.get_session(handle, consistent=True).version
        hook = WriteBeforeCommit(dynamodb, lambda: meanwhile(other.url, api_key, handle, store))
        racing.endpoint.store.gateway.reset_counts()
        answer = tool(racing.url, api_key, 10, "increment_counter", {"session": handle, "name": "hits"})
        assert hook.fired == 1 and structured(answer) == {"name": "hits", "value": value}
        expected = {"batch_get_item": 1, "transact_write_items": runs, **({"get_item": 1} if runs > 1 else {})}
        assert dict(racing.endpoint.store.gateway.calls) == expected, "ran again for a write it never read"
        stored = store.get_session(handle, consistent=True)
        assert stored.version == version + 2 and stored.attributes["counters"] == {"hits": value}


async def _naive_rebase(
    self: ToolCallRunner, prepared: Any, call: Any, session: Any, deadline: float
) -> dict[str, Any]:
    """The naive policy: run the tool once; on a version conflict commit the same (stale)
    result and writes on top of the newer state (its conditions moved to the versions that won)."""
    started = self._clock.now()
    pending = PendingChanges(prepared.spec.effect, session)
    result = await self._invoke(prepared, self._context(prepared, call, session, pending), deadline)
    finished = self._clock.now()
    for _ in range(3):
        try:
            return await self._commit(prepared, call, pending, session, result, started, finished)
        except VersionConflict as exc:
            session = exc.current
            pending.session = session
            pending.attribute_reads = {name: session.attribute_version(name) for name in pending.attribute_reads}
    raise JsonRpcError(CONFLICT, "Session changed concurrently; retry the call")


def test_control_rebasing_a_stale_result_fails_the_same_test(
    pair: tuple[Instance, Instance], api_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control: committing the stale result on conflict (without running the tool again)
    loses increments and answers duplicates, so the test above can detect it."""
    monkeypatch.setattr(ToolCallRunner, "_run_read_modify_write", _naive_rebase)
    handle = open_handle(pair[0].url, api_key)
    with pytest.raises(AssertionError, match=r"calls failed|stale answers"):
        assert_increments_exact(pair, api_key, handle, 32)


@pytest.fixture()
def conflicting_pair(aws: AwsStack) -> Iterator[tuple[tuple[Instance, Instance], list[TransactionConflicts]]]:
    """Two instances whose DynamoDB clients see TransactionConflict on 30 % of transactions."""
    clients = [aws.client("dynamodb"), aws.client("dynamodb")]
    hooks = [TransactionConflicts(c, 0.3, seed=i) for i, c in enumerate(clients)]
    with endpoint_instance(aws, dynamodb=clients[0]) as a, endpoint_instance(aws, dynamodb=clients[1]) as b:
        yield (a, b), hooks


def test_d10_30_percent_transaction_conflicts_every_call_still_succeeds(
    conflicting_pair: tuple[tuple[Instance, Instance], list[TransactionConflicts]], api_key: str
) -> None:
    """D10: TransactionConflict (which moto never raises) on 30 % of commits: every one of 32
    parallel appends still succeeds, exactly once, after retries with backoff and jitter."""
    pair, hooks = conflicting_pair
    handle = open_handle(pair[0].url, api_key)
    before = session_info(pair[0].url, api_key, handle)["version"]
    assert_appends_committed(pair, api_key, handle, [f"c{i}" for i in range(32)], before)
    assert sum(h.injected for h in hooks) >= 10


def test_control_unretried_transaction_conflicts_fail_the_same_test(
    conflicting_pair: tuple[tuple[Instance, Instance], list[TransactionConflicts]], api_key: str
) -> None:
    """Control: without the conflict retry budget the same run loses calls."""
    pair, _ = conflicting_pair
    for instance in pair:
        instance.endpoint.store.conflict_backoff = Backoff(retries=0)
    handle = open_handle(pair[0].url, api_key)
    before = session_info(pair[0].url, api_key, handle)["version"]
    with pytest.raises(AssertionError, match="calls failed"):
        assert_appends_committed(pair, api_key, handle, [f"c{i}" for i in range(32)], before)


def test_d10_exhausted_conflict_budget_is_the_documented_retryable_error(aws: AwsStack, api_key: str) -> None:
    """D10: a session whose every transaction conflicts: the call answers -31004 (retryable),
    as HTTP 503 + Retry-After when the answer is plain JSON (2026), and nothing is committed."""
    dynamodb = aws.client("dynamodb")
    with endpoint_instance(aws) as healthy, endpoint_instance(aws, dynamodb=dynamodb) as busy:
        TransactionConflicts(dynamodb, 1.0)
        busy.endpoint.store.conflict_backoff = Backoff(retries=2, base_seconds=0.01)
        handle = open_handle(healthy.url, api_key)
        before = session_info(healthy.url, api_key, handle)["version"]
        answer = tool(busy.url, api_key, 5, "append_note", {"session": handle, "text": "x"})  # SSE
        assert answer["error"]["code"] == UNAVAILABLE and answer["error"]["data"]["retryable"] is True
        params = {"name": "append_note", "arguments": {"session": handle, "text": "x"}, "_meta": CAPS_META}
        extra = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "append_note"}
        plain = httpx.post(  # plain JSON: the transport can still say it with the status
            busy.url,
            headers={**headers(api_key, **extra), "Accept": "application/json"},
            json={"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": params},
            timeout=30,
        )
        assert plain.status_code == 503 and plain.headers["retry-after"] == "1"
        assert plain.json()["error"]["code"] == UNAVAILABLE
        assert session_info(healthy.url, api_key, handle)["version"] == before


def call_flaky_twice(url: str, key: str, handle: str, tag: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """One logical call retried with the same idempotency key after its first run was throttled."""
    flaky.THROTTLES[tag] = 1
    meta = {IDEMPOTENCY_KEY_META: f"key-{tag}"}
    first = tool(url, key, 6, "flaky_append", {"session": handle, "tag": tag}, **meta)
    retry = tool(url, key, 7, "flaky_append", {"session": handle, "tag": tag}, **meta)
    return first, retry


def assert_retry_ran_the_tool(pair: tuple[Instance, Instance], key: str, tag: str) -> None:
    handle = open_handle(pair[0].url, key)
    first, retry = call_flaky_twice(pair[0].url, key, handle, tag)
    assert first.get("error", {}).get("code") in (UNAVAILABLE, TOOL_FAILED), first
    assert structured(retry) == {"run": 2} and flaky.RUNS[tag] == 2, (retry, flaky.RUNS[tag])
    notes = structured(tool(pair[1].url, key, 8, "read_notes", {"session": handle}))["notes"]
    assert [n["text"] for n in notes] == [tag]


def test_a_throttled_tool_run_is_not_committed_and_the_retry_runs_the_tool(
    pair: tuple[Instance, Instance], api_key: str
) -> None:
    """An unexpected failure inside a tool (a throttle) is answered as a retryable error and
    not committed: the retry with the same idempotency key runs the tool, it does not replay
    the failure."""
    assert_retry_ran_the_tool(pair, api_key, "throttled-once")


def test_control_committing_the_failure_replays_it(
    pair: tuple[Instance, Instance], api_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control: a runner that answers the failure as a committed error result replays it."""

    async def commits_failure(
        self: ToolCallRunner, prepared: Any, ctx: Any, deadline: float | None = None
    ) -> dict[str, Any]:
        try:
            return to_result(await prepared.spec.function(ctx, **prepared.arguments))
        except Exception:
            return error_result("internal error")

    monkeypatch.setattr(ToolCallRunner, "_invoke", commits_failure)
    with pytest.raises(AssertionError):
        assert_retry_ran_the_tool(pair, api_key, "throttled-control")


def test_an_idempotency_key_raced_by_six_different_requests_answers_only_its_own(
    pair: tuple[Instance, Instance], aws: AwsStack, api_key: str
) -> None:
    """D4 (README, idempotent tools/call): Given one session and one idempotency key, When six
    increment_counter calls with different names (c0..c5) race over two instances, Then exactly
    one commits and answers its own counter; every other is refused with -32602 (at the commit,
    or before the run when the marker was already there), none is answered another request's
    result, and only the winner's counter exists. Afterwards the key replays the winner's result
    for the same request and refuses any other request, on both instances."""
    handle = open_handle(pair[0].url, api_key)
    calls: list[ToolCallSpec] = [("increment_counter", {"session": handle, "name": f"c{i}"}) for i in range(6)]
    responses = fan_out(pair, api_key, calls, **{IDEMPOTENCY_KEY_META: "one-key"})
    answered = {i: structured(r) for i, r in enumerate(responses) if "result" in r}
    assert all(answer["name"] == calls[i][1]["name"] for i, answer in answered.items()), (
        f"answered another request's result: {answered}"
    )
    assert len(answered) == 1, f"{len(answered)} calls answered for one key: {answered}"
    refused = [r["error"]["code"] for r in responses if "error" in r]
    assert refused == [INVALID_PARAMS] * 5, responses
    ((winner, answer),) = answered.items()
    assert answer == {"name": f"c{winner}", "value": 1}
    stored = SessionStore(aws.table, client=aws.client("dynamodb")).get_session(handle, consistent=True)
    assert stored.attributes["counters"] == {f"c{winner}": 1}
    for instance in pair:  # replay: the same request gets the original, another one -32602
        again = tool(instance.url, api_key, 20, *calls[winner], **{IDEMPOTENCY_KEY_META: "one-key"})
        assert structured(again) == answer
        other = tool(instance.url, api_key, 21, *calls[(winner + 1) % 6], **{IDEMPOTENCY_KEY_META: "one-key"})
        assert other["error"]["code"] == INVALID_PARAMS, other


def age_session(aws: AwsStack, handle: str, seconds_left: int) -> None:
    """Move the session's expiry to ``seconds_left`` from now, as if it had been open that long."""
    aws.client("dynamodb").update_item(
        TableName=aws.table,
        Key={ts.PK: {"S": ts.session_pk(handle)}, ts.SK: {"S": ts.METADATA_SK}},
        UpdateExpression="SET #ttl = :ttl",
        ExpressionAttributeNames={"#ttl": ts.TTL},
        ExpressionAttributeValues={":ttl": {"N": str(int(time.time()) + seconds_left)}},
    )


def test_d7_a_session_that_is_only_read_slides_its_expiry_past_half_its_lifetime(
    pair: tuple[Instance, Instance], aws: AwsStack, api_key: str
) -> None:
    """D7 (sliding expiry) for read-only tools: Given a session (lifetime 3600 s) with 100 s
    left, When 8 read-only calls run at once over two instances, Then every one succeeds and
    sees the extended expiry, the stored ttl is about now + 3600 and the version is unchanged
    (a ttl-only write); once more than half the lifetime is left again, reads write nothing.
    Then reads racing 8 increments on a session aged again all succeed and the increments
    answer exactly 1..8: the ttl-only write never conflicts with a commit."""
    store = SessionStore(aws.table, client=aws.client("dynamodb"))
    handle = open_handle(pair[0].url, api_key)
    version = store.get_session(handle, consistent=True).version
    age_session(aws, handle, 100)
    reads: list[ToolCallSpec] = [("session_info", {"session": handle}), ("read_notes", {"session": handle})] * 4
    before = int(time.time())
    responses = fan_out(pair, api_key, reads)
    assert not failures(responses), failures(responses)
    stored = store.get_session(handle, consistent=True)
    assert stored.ttl >= before + 3600 - 5, f"a session only read was not extended: {stored.ttl - before} s left"
    assert stored.version == version
    assert all(structured(r)["expires_at"] >= before + 3600 - 5 for r in responses[::2])
    for instance in pair:
        instance.endpoint.store.gateway.reset_counts()
    fan_out(pair, api_key, reads[:2])
    assert [instance.endpoint.store.gateway.calls["update_item"] for instance in pair] == [0, 0]
    age_session(aws, handle, 100)
    mixed = [*reads, *[("increment_counter", {"session": handle, "name": "hits"})] * 8]
    responses = fan_out(pair, api_key, mixed)
    assert not failures(responses), failures(responses)
    assert sorted(structured(r)["value"] for r in responses[len(reads) :]) == list(range(1, 9))
    assert store.get_session(handle, consistent=True).version == version + 8
