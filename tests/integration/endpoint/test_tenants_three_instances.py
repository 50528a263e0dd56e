"""G3 across instances: two tenants each with a principal named alice, three endpoint instances on
one table. A session handle, a 2025 transport session, a task id and an idempotency key of tenant
acme are unknown to globex's alice on every instance (answered as a stranger's are); the calls'
events, usage counters, quota totals and audit records are scoped by the tenant; a tenant rate
limit counts the tenant's principals together.

Each isolation test has a control that runs the same scenario with the owner spelled as the
principal id alone (what the platform did before tenants) and shows the leak it catches.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from examples import conformance
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.application.auth.base import Principal
from mcp_platform.bootstrap.ingest import build_ingestor
from mcp_platform.ops.__main__ import run as ops
from mcp_platform.protocol.jsonrpc import QUOTA_EXCEEDED, RATE_LIMITED
from mcp_platform.protocol.tasks import EXTENSION_ID
from mcp_platform.protocol.versions import IDEMPOTENCY_KEY_META
from tests.support import task_tools
from tests.support.audit_stream import audit_everything
from tests.support.endpoint import AwsStack, Instance, endpoint_instance, fresh_stack
from tests.support.governance import create_limits_table
from tests.support.interactive import modern_meta
from tests.support.kinesis import read_whole_stream
from tests.support.mcp_http import CAPS_META, call, final_message, initialize, modern_call

pytestmark = pytest.mark.integration

aws = pytest.fixture(fresh_stack, name="aws")
STRANGERS_SESSION = -31001  # what a handle of someone else's session is answered with
UNKNOWN_TASK = -32602
QUOTAS = '{"principal": "50/day", "tenant": "3/day"}'


@pytest.fixture
def three(aws: AwsStack) -> Iterator[list[Instance]]:
    """Three instances with tasks on (a queue no worker reads: a task stays ``working``)."""
    queue = aws.client("sqs").create_queue(QueueName=f"tasks-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    with ExitStack() as stack:
        yield [
            stack.enter_context(endpoint_instance(aws, extra_tools=(conformance, task_tools), MCP_TASK_QUEUE_URL=queue))
            for _ in range(3)
        ]


@pytest.fixture
def keys(aws: AwsStack) -> dict[str, str]:
    """alice of acme, alice of globex (the same principal name), and alice with no tenant."""
    store = ApiKeyStore(aws.table, aws.client("dynamodb"))
    return {
        "acme": store.mint("alice", tenant="acme"),
        "globex": store.mint("alice", tenant="globex"),
        "none": store.mint("alice"),
    }


@pytest.fixture
def naive_owner(monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner spelled as the principal id alone, tenant ignored (the control)."""
    monkeypatch.setattr(Principal, "owner", property(lambda self: self.id))


def tool(url: str, key: str, request_id: int, name: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": {**CAPS_META, **meta}}
    return final_message(modern_call(url, key, request_id, "tools/call", params))


def open_handle(url: str, key: str) -> str:
    opened = tool(url, key, 1, "open_session", {"title": "acme's"})
    return str(opened["result"]["structuredContent"]["session"])


def leaks(three: list[Instance], keys: dict[str, str]) -> dict[str, Any]:
    """What globex's alice gets, on instances b and c, from acme's alice's handle, 2025 session,
    task and idempotency key (all made on instance a)."""
    a, b, c = three
    handle = open_handle(a.url, keys["acme"])
    appended = tool(
        a.url, keys["acme"], 2, "append_note", {"session": handle, "text": "secret"}, **{IDEMPOTENCY_KEY_META: "k1"}
    )
    assert "result" in appended, appended
    transport = initialize(a.url, keys["acme"])
    tasks = modern_meta({"extensions": {EXTENSION_ID: {}}})
    created = final_message(
        modern_call(
            a.url,
            keys["acme"],
            3,
            "tools/call",
            {"name": "slow_compute", "arguments": {"seconds": 0, "label": "x"}, "_meta": tasks},
        )
    )
    task_id = created["result"]["taskId"]
    return {
        "read": tool(b.url, keys["globex"], 4, "read_notes", {"session": handle}),
        "replay": tool(
            c.url,
            keys["globex"],
            5,
            "append_note",
            {"session": handle, "text": "secret"},
            **{IDEMPOTENCY_KEY_META: "k1"},
        ),
        "transport": call(b.url, keys["globex"], transport, 6, "tools/list"),
        "task": final_message(modern_call(c.url, keys["globex"], 7, "tasks/get", {"taskId": task_id, "_meta": tasks})),
        "owner_reads": tool(c.url, keys["acme"], 8, "read_notes", {"session": handle}),
    }


def test_a_tenants_handles_are_a_strangers_to_another_tenant_on_every_instance(
    three: list[Instance], keys: dict[str, str]
) -> None:
    """Given acme's alice's session handle, 2025 session, task and idempotency key made on
    instance a, when globex's alice (same principal name) presents them on b and c, then each is
    answered as a stranger's: -31001, HTTP 404, -32602, and the keyed replay is refused rather
    than answered with acme's stored result; acme's alice still reads her note anywhere."""
    seen = leaks(three, keys)
    assert seen["read"]["error"]["code"] == STRANGERS_SESSION, seen["read"]
    assert seen["replay"]["error"]["code"] == STRANGERS_SESSION, seen["replay"]
    assert seen["transport"].status_code == 404
    assert seen["task"]["error"]["code"] == UNKNOWN_TASK, seen["task"]
    notes = seen["owner_reads"]["result"]["structuredContent"]
    assert "secret" in json.dumps(notes)
    # And alice without a tenant is a third owner: acme's handle is a stranger's to her too
    a = three[0]
    untenanted = tool(a.url, keys["none"], 9, "read_notes", {"session": open_handle(a.url, keys["acme"])})
    assert untenanted["error"]["code"] == STRANGERS_SESSION


def test_control_an_owner_without_its_tenant_leaks_every_handle(
    three: list[Instance], keys: dict[str, str], naive_owner: None
) -> None:
    """The same scenario with the owner spelled as the principal id: globex's alice reads acme's
    notes, replays its keyed call, uses its 2025 session and sees its task."""
    seen = leaks(three, keys)
    assert "secret" in json.dumps(seen["read"]["result"])
    assert "result" in seen["replay"] and seen["transport"].status_code == 200
    assert "result" in seen["task"]


def ingest_everything(aws: AwsStack) -> list[dict[str, Any]]:
    """The stream's events, after the ingest function counted them (quotas on: with totals)."""
    ingestor = build_ingestor(aws.settings(MCP_QUOTAS=QUOTAS), dynamodb=aws.client("dynamodb"))
    events = []
    for record in read_whole_stream(aws.client("kinesis"), aws.stream):
        ingestor.ingest_record(base64.b64encode(record["Data"]).decode())
        events.append(json.loads(record["Data"]))
    return events


def echo(url: str, key: str, request_id: int) -> httpx.Response:
    params = {"name": "echo", "arguments": {"text": "x"}, "_meta": CAPS_META}
    return modern_call(url, key, request_id, "tools/call", params)


def test_events_usage_quotas_and_audit_records_are_scoped_by_the_tenant(
    aws: AwsStack, keys: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Given tenant: 3/day, when acme's alice makes three calls over two instances and globex's
    alice one, then the events carry each tenant, ingest counts them per owner and per tenant,
    acme's next call is refused by the tenant quota on either instance while globex's alice
    still calls, and the ops commands show one tenant's usage and audit trail."""
    with ExitStack() as stack:
        two = [stack.enter_context(endpoint_instance(aws, MCP_QUOTAS=QUOTAS)) for _ in range(2)]
        acme_handle = open_handle(two[0].url, keys["acme"])
        assert "result" in tool(two[1].url, keys["acme"], 2, "append_note", {"session": acme_handle, "text": "a"})
        assert "result" in final_message(echo(two[0].url, keys["acme"], 3))
        globex_handle = open_handle(two[1].url, keys["globex"])
        events = ingest_everything(aws)
        assert sorted((event["principal"], event.get("tenant")) for event in events) == [
            *[("tenant:acme/alice", "acme")] * 3,
            ("tenant:globex/alice", "globex"),
        ]
        for n, instance in enumerate(two):
            over = echo(instance.url, keys["acme"], 10 + n)
            assert over.status_code == 429, over.text
            error = over.json()["error"]
            assert error["code"] == QUOTA_EXCEEDED and error["data"]["quota"] == "tenant:day", error
        assert "result" in tool(two[1].url, keys["globex"], 5, "read_notes", {"session": globex_handle})
    env = {"SESSION_TABLE_NAME": aws.table, "AWS_REGION": "us-east-1", "MCP_QUOTAS": QUOTAS}
    clients = {"dynamodb": aws.client("dynamodb")}
    capsys.readouterr()
    assert ops(["usage", "show", "--tenant", "acme"], env, clients) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["quota_totals"]["today_calls"] == 3
    assert ops(["usage", "show", "alice", "--tenant", "globex"], env, clients) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["quota_totals"]["today_calls"] == 1
    assert ops(["usage", "show", "alice"], env, clients) == 0  # the untenanted alice: nothing
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["quota_totals"]["today_calls"] == 0
    # Audit: acme's trail names acme's session only, every record of it
    audit_everything(aws)
    audit_env = {**env, "AUDIT_TABLE_NAME": f"{aws.table}-audit"}
    assert ops(["audit", "tenant", "acme"], audit_env, clients) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {record["session_id"] for record in records} == {acme_handle}
    assert {record["item"] for record in records} >= {ts.METADATA_SK}
    assert any(record["item"].startswith(ts.TOOL_RECORD_PREFIX) for record in records)
    assert ops(["audit", "tenant", "bad/name"], audit_env, clients) == 2


def test_a_tenant_rate_limit_counts_the_tenants_principals_together(aws: AwsStack, keys: dict[str, str]) -> None:
    """Given tenant: 4/hour, when acme's alice and acme's bob send three requests each over three
    instances, then four are admitted in all and the rest refused naming the tenant rule; globex,
    and alice without a tenant, are not counted by it."""
    store = ApiKeyStore(aws.table, aws.client("dynamodb"))
    acme_bob = store.mint("bob", tenant="acme")
    limits = f"limits-{uuid.uuid4().hex[:8]}"
    create_limits_table(aws.client("dynamodb"), limits)
    rules = '{"tenant": "4/hour"}'
    with ExitStack() as stack:
        three = [
            stack.enter_context(endpoint_instance(aws, MCP_RATE_LIMITS=rules, LIMITS_TABLE_NAME=limits))
            for _ in range(3)
        ]
        answers = [echo(three[n % 3].url, key, n) for n, key in enumerate([keys["acme"], acme_bob] * 3)]
        others = [echo(three[n % 3].url, keys[name], n) for n, name in enumerate(["globex", "none"] * 3)]
    assert sorted(answer.status_code for answer in answers) == [200] * 4 + [429] * 2
    refused = [answer.json()["error"] for answer in answers if answer.status_code == 429]
    assert all(error["code"] == RATE_LIMITED and error["data"]["limit"] == "tenant" for error in refused)
    assert [answer.status_code for answer in others] == [200] * 6
