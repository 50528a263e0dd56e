"""K10 with real processes: an endpoint instance killed (SIGKILL) at a named point loses no event.

`make dev` owns the emulator, ingest and audit; the instance under test is an attached endpoint
whose every AWS call goes through a proxy (tests/support/holding_proxy.py). The proxy holds the
call that follows the point, here the Kinesis PutRecords of the instance's event flush; the test
kills the instance while it is held, then drops it, so the events in that flush never leave the
process. Deterministic: nothing waits on a timer except the deadlines of what must arrive.
"""

from __future__ import annotations

import contextlib
import datetime
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from local.resources import local_name
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.protocol.versions import IDEMPOTENCY_KEY_META
from tests.support.holding_proxy import PUT_RECORDS, HoldingProxy, holding_proxy
from tests.support.interactive import modern_meta
from tests.support.local_platform import LocalPlatform, local_platform, wait_for
from tests.support.mcp_http import MODERN, final_message, headers, modern_call

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_crash")]
STAGE = "dev"
SESSION_TABLE = local_name(STAGE, "DataSessionTable")
PRINCIPAL = "local-developer"  # every dev key's principal (local/platform.py)
CALLS = 6
HOLD_DEADLINE_S = 20
PIPELINE_DEADLINE_S = 45


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPlatform]:
    with local_platform(tmp_path_factory.mktemp("crash")) as running:
        yield running


@pytest.fixture
def proxy(platform: LocalPlatform) -> Iterator[HoldingProxy]:
    with holding_proxy(platform.aws_url) as started:
        yield started


@contextmanager
def doomed_instance(platform: LocalPlatform, proxy: HoldingProxy, log_dir: Any) -> Iterator[LocalPlatform]:
    """An endpoint attached to the platform's emulator through the proxy, to be killed."""
    with local_platform(log_dir, env={"LOCAL_AWS_PORT": str(proxy.port)}, args=["--attach"]) as instance:
        yield instance


def call_tool(instance: LocalPlatform, name: str, arguments: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    meta = modern_meta() if key is None else modern_meta(**{IDEMPOTENCY_KEY_META: key})
    params = {"name": name, "arguments": arguments, "_meta": meta}
    answer = final_message(modern_call(instance.mcp_url, instance.api_key, 1, "tools/call", params))
    assert "result" in answer and not answer["result"].get("isError"), answer
    return dict(answer["result"])


def bytes_received(instance: LocalPlatform, name: str, arguments: dict[str, Any]) -> bytes:
    """Every byte of the answer the client received, whether or not the response ended."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    body["params"]["_meta"] = modern_meta()
    extra = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name}
    received = b""
    try:
        with httpx.stream(
            "POST", instance.mcp_url, headers=headers(instance.api_key, **extra), json=body, timeout=30
        ) as response:
            for chunk in response.iter_raw():
                received += chunk
    except httpx.HTTPError:
        pass  # the connection ended under the response: what arrived is what counts
    return received


def tool_call_ids(platform: LocalPlatform, session: str) -> list[str]:
    """The ids of the session's committed tool-call records (a consistent read of the table)."""
    found = platform.aws("dynamodb").query(
        TableName=SESSION_TABLE,
        KeyConditionExpression="#pk = :pk AND begins_with(#sk, :tool)",
        ExpressionAttributeNames={"#pk": ts.PK, "#sk": ts.SK},
        ExpressionAttributeValues={":pk": {"S": ts.session_pk(session)}, ":tool": {"S": "tool#"}},
        ConsistentRead=True,
    )
    return [item[ts.TOOL_CALL_ID]["S"] for item in found["Items"]]


def counted(platform: LocalPlatform, event_ids: list[str]) -> list[str]:
    """Which of the events ingest has counted (its dedupe marker exists)."""
    dynamodb = platform.aws("dynamodb")
    return [
        event_id
        for event_id in event_ids
        if "Item"
        in dynamodb.get_item(
            TableName=SESSION_TABLE,
            Key={ts.PK: {"S": ts.event_dedupe_pk(event_id)}, ts.SK: {"S": ts.EVENT_DEDUPE_SK}},
            ConsistentRead=True,
        )
    ]


def usage_calls(platform: LocalPlatform, tool: str) -> int:
    day = datetime.datetime.now(datetime.UTC).date().isoformat()
    item = (
        platform.aws("dynamodb")
        .get_item(
            TableName=SESSION_TABLE,
            Key={ts.PK: {"S": ts.usage_pk(PRINCIPAL)}, ts.SK: {"S": ts.usage_sk(day, tool)}},
            ConsistentRead=True,
        )
        .get("Item", {})
    )
    return int(item.get(ts.USAGE_CALLS, {}).get("N", "0"))


def commit_and_die(
    platform: LocalPlatform, proxy: HoldingProxy, log_dir: Any, session: str, keys: list[str]
) -> list[str]:
    """Appends one note per key through a doomed instance, kills it once every call has committed
    and the flush of their events is held, and returns the committed calls' ids."""
    with doomed_instance(platform, proxy, log_dir) as doomed, ThreadPoolExecutor(len(keys)) as pool:
        proxy.hold(PUT_RECORDS)
        calls: list[Future[dict[str, Any]]] = [
            pool.submit(call_tool, doomed, "append_note", {"session": session, "text": key}, key) for key in keys
        ]
        proxy.wait_held(1, HOLD_DEADLINE_S)
        committed = wait_for(
            lambda: (ids := tool_call_ids(platform, session)) and len(ids) == len(keys) and ids,
            HOLD_DEADLINE_S,
            "every call's commit",
        )
        doomed.kill()
        proxy.drop_held()
        for answer in calls:  # answered or not: what matters is what reached the stream
            with contextlib.suppress(httpx.HTTPError, AssertionError):
                answer.result(timeout=HOLD_DEADLINE_S)
    return committed


def test_k10_committed_calls_of_a_killed_instance_reach_the_stream_without_a_retry(
    platform: LocalPlatform, proxy: HoldingProxy, tmp_path: Any
) -> None:
    # Given a session, and six append-only calls committed by an instance whose event flush is held
    session = call_tool(platform, "open_session", {})["structuredContent"]["session"]
    before = usage_calls(platform, "append_note")
    committed = commit_and_die(platform, proxy, tmp_path, session, [uuid.uuid4().hex for _ in range(CALLS)])
    # When the instance is killed there, and no client retries
    # Then every committed call's event reaches the stream and ingest counts each exactly once
    wait_for(lambda: len(counted(platform, committed)) == CALLS, PIPELINE_DEADLINE_S, "the events counted by ingest")
    assert usage_calls(platform, "append_note") - before == CALLS


def test_k10_committed_calls_of_a_killed_instance_retried_elsewhere_are_counted_once(
    platform: LocalPlatform, proxy: HoldingProxy, tmp_path: Any
) -> None:
    # Given six append-only calls committed by an instance killed while their events were held
    session = call_tool(platform, "open_session", {})["structuredContent"]["session"]
    before = usage_calls(platform, "append_note")
    keys = [uuid.uuid4().hex for _ in range(CALLS)]
    committed = commit_and_die(platform, proxy, tmp_path, session, keys)
    # When the client retries each, with its idempotency key, on another instance
    for key in keys:
        assert call_tool(platform, "append_note", {"session": session, "text": key}, key)["structuredContent"] == {
            "appended": 1
        }
    # Then every note is stored once, and every call's event is counted exactly once
    notes = call_tool(platform, "read_notes", {"session": session, "limit": 50})["structuredContent"]["notes"]
    assert sorted(note["text"] for note in notes) == sorted(keys)
    wait_for(lambda: len(counted(platform, committed)) == CALLS, PIPELINE_DEADLINE_S, "the events counted by ingest")
    assert usage_calls(platform, "append_note") - before == CALLS


def test_k10_a_stateless_call_is_answered_before_its_event_leaves(
    platform: LocalPlatform, proxy: HoldingProxy, tmp_path: Any
) -> None:
    """A stateless call's answer waits on no AWS call: an instance that dies while its event's
    flush is held leaves the client its result, and that event (never committed anywhere) is the
    one loss dead-letters.md names."""
    # Given a stateless call (nothing committed) whose event flush is held
    with doomed_instance(platform, proxy, tmp_path) as doomed, ThreadPoolExecutor(1) as pool:
        proxy.hold(PUT_RECORDS)
        answer = pool.submit(bytes_received, doomed, "echo", {"text": "last words"})
        proxy.wait_held(1, HOLD_DEADLINE_S)
        # When the instance dies before its event left
        doomed.kill()
        proxy.drop_held()
        # Then the client had received the call's result all the same
        received = answer.result(timeout=HOLD_DEADLINE_S)
        assert b'"result"' in received and b"last words" in received, received
