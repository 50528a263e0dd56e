"""AWS round trips on each operation's critical path, counted (deterministic), not estimated.

Our endpoint runs in-process on real boto3 clients against a local moto server; a botocore
``before-call`` hook on every client counts each API call (service.Operation). Each operation
runs once to warm the caches (API-key verification, the request-state key secret), then is
counted on its second run: the warm figure, what a warm Lambda environment pays. The peer (the
official SDK) makes no AWS call at all: its 2025 sessions live in one process's memory (so a
second instance cannot serve them) and it emits no events; the ``peer`` column shows that 0.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections import Counter
from typing import Any

from common import (
    BENCH_KEY,
    BOTH,
    HANDSHAKE,
    INITIALIZE,
    INITIALIZED,
    MODERN,
    modern_call,
    modern_request,
    row,
    tool_call,
)
from fakes import asgi_post

ELICITING = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
WITH_TASKS = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
}


class CallCounter:
    """Counts every API call by operation; a DynamoDB read is named by what may serve it:
    ``[cache]`` an eventually consistent read the DAX item cache may answer (X6), ``[consistent]``
    one that always reaches the table (X4)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def attach(self, client: Any) -> Any:
        client.meta.events.register("before-parameter-build", self._count)
        return client

    def _count(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        name = f"{model.service_model.service_name}.{model.name}"
        if model.name == "GetItem":
            name += "[consistent]" if params.get("ConsistentRead") else "[cache]"
        elif model.name == "BatchGetItem":
            consistent = any(spec.get("ConsistentRead") for spec in params.get("RequestItems", {}).values())
            name += "[consistent]" if consistent else "[cache]"
        self.calls[name] += 1


def _counted_app(aws: Any, counter: CallCounter, task_queue_url: str, dax: Any = None) -> Any:
    from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
    from mcp_platform.bootstrap.endpoint import build_app
    from tests.support import ask_tools, platform_tools

    dynamodb = counter.attach(aws.client("dynamodb"))
    ApiKeyStore(aws.table, aws.client("dynamodb")).mint("bench", key=BENCH_KEY)
    return build_app(
        aws.settings(MCP_TASK_QUEUE_URL=task_queue_url),  # the tasks extension on, as deployed
        platform_tools,
        ask_tools,
        dynamodb=dynamodb,
        kinesis=counter.attach(aws.client("kinesis")),
        sqs=counter.attach(aws.client("sqs")),
        secretsmanager=counter.attach(aws.client("secretsmanager")),
        metrics_stream=io.StringIO(),
        dax=dax,
    )


def _age_session(aws: Any, handle: str, seconds_left: int) -> None:
    """Move a session's expiry to ``seconds_left`` from now (an uncounted client: setup only)."""
    import time

    from mcp_platform.adapters.dynamodb import table_schema as ts

    aws.client("dynamodb").update_item(
        TableName=aws.table,
        Key={ts.PK: {"S": ts.session_pk(handle)}, ts.SK: {"S": ts.METADATA_SK}},
        UpdateExpression="SET #ttl = :ttl",
        ExpressionAttributeNames={"#ttl": ts.TTL},
        ExpressionAttributeValues={":ttl": {"N": str(int(time.time()) + seconds_left)}},
    )


async def _operations(app: Any, counter: CallCounter, aws: Any) -> list[tuple[str, dict[str, int], str]]:
    bearer = {"authorization": f"Bearer {BENCH_KEY}"}
    out: list[tuple[str, dict[str, int], str]] = []

    async def post(headers: dict[str, str], body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        status, answer_headers, raw = await asgi_post(app, "/mcp", {**bearer, **headers}, body)
        assert status in (200, 202), (status, raw[:300])
        return status, answer_headers, raw

    async def counted(label: str, note: str, make: Any) -> Any:
        await make(0)  # warm: caches filled, lazy clients built
        counter.calls.clear()
        result = await make(1)
        out.append((label, dict(counter.calls), note))
        return result

    import json

    async def modern(name: str, arguments: dict[str, Any], **params: Any) -> dict[str, Any]:
        headers, body = modern_call("x", name, arguments)
        body["params"].update(params)
        _, _, raw = await post(headers, body)
        answer: dict[str, Any] = json.loads(raw)
        return answer

    opened = await modern("open_session", {})
    handle = opened["result"]["structuredContent"]["session"]
    await counted("2026 tools/call, no session", "echo", lambda _: modern("echo", {"text": "hi"}))
    await counted(
        "2026 tools/call, append-only session tool",
        "append_note on a session handle",
        lambda _: modern("append_note", {"session": handle, "text": "n"}),
    )
    await counted(
        "2026 tools/call, read-only session tool",
        "session_info on a session handle",
        lambda _: modern("session_info", {"session": handle}),
    )
    await counted(
        "2026 tools/call, read-only session tool that reads a cached session",
        "read_notes (consistency='eventual', X6): its BatchGet may be served by the DAX item cache",
        lambda _: modern("read_notes", {"session": handle}),
    )

    async def aged_read(_: int) -> Any:
        _age_session(aws, handle, 60)  # less than half of the session's lifetime left
        return await modern("session_info", {"session": handle})

    await counted(
        "2026 tools/call, read-only session tool, past half the session's lifetime",
        "session_info: its expiry slides (D7) with one ttl-only UpdateItem, no version bump",
        aged_read,
    )

    async def modern_list(_: int) -> Any:
        return await post(*modern_request("l", "tools/list"))

    await counted("2026 tools/list", "", modern_list)

    async def input_round(attempt: int) -> Any:
        meta = {**ELICITING, "io.modelcontextprotocol/idempotencyKey": f"note-{attempt}"}
        arguments = {"session": handle, "tag": f"t{attempt}"}
        first = await modern("noted_answer", arguments, _meta=meta)
        assert first["result"]["resultType"] == "input_required", first
        return first, meta, arguments

    first, meta, arguments = await counted(
        "2026 input-required round 1", "noted_answer asks: InputRequiredResult + sealed requestState", input_round
    )

    counter.calls.clear()  # round 2 of the counted round 1 (warm: the key secret is cached)
    answer = {"note": {"action": "accept", "content": {"note": "hello"}}}
    state = first["result"]["requestState"]
    done = await modern("noted_answer", arguments, _meta=meta, inputResponses=answer, requestState=state)
    assert done["result"]["structuredContent"]["note"] == "hello", done
    out.append(
        (
            "2026 input-required round 2",
            dict(counter.calls),
            "the answer: state consumed (one-time), session read, commit, event",
        )
    )

    async def create_task(_: int) -> str:
        created = await modern("session_report", {"session": handle}, _meta=WITH_TASKS)
        assert created["result"]["resultType"] == "task", created
        return str(created["result"]["taskId"])

    task_id = await counted(
        "2026 tools/call answered as a task",
        "session_report with the tasks extension: the task written, its message queued (the worker runs it)",
        create_task,
    )

    async def poll_task(_: int) -> Any:
        headers, body = modern_request("g", "tasks/get", {"taskId": task_id})
        return await post({**headers, "mcp-name": task_id}, {**body, "params": {**body["params"], "_meta": WITH_TASKS}})

    await counted("2026 tasks/get", "the task's status (owner-checked), from any instance", poll_task)

    async def initialize(_: int) -> dict[str, str]:
        _, answer_headers, _ = await post({"accept": BOTH}, INITIALIZE)
        session = {
            "accept": BOTH,
            "mcp-session-id": answer_headers["mcp-session-id"],
            "mcp-protocol-version": HANDSHAKE,
        }
        await post(session, INITIALIZED)
        return session

    session = await counted(
        "2025 initialize + notifications/initialized",
        "initialize persists the transport session (PutItem); the notification checks it (GetItem)",
        initialize,
    )
    await counted(
        "2025 tools/call in a session, no session tool",
        "echo: the Mcp-Session-Id read",
        lambda i: post(session, tool_call(f"e{i}", "echo", {"text": "hi"})),
    )
    await counted(
        "2025 tools/call, session tool on the transport session",
        "append_note: its BatchGet doubles as the session check",
        lambda i: post(session, tool_call(f"a{i}", "append_note", {"text": "n"})),
    )
    await counted(
        "2025 tools/list", "", lambda i: post(session, {"jsonrpc": "2.0", "id": f"l{i}", "method": "tools/list"})
    )
    return out


async def _agent_mix(app: Any) -> None:
    """An agent's 20 calls in one 2025 session: lists, read-only and committing tools."""
    bearer = {"authorization": f"Bearer {BENCH_KEY}"}
    _, answer_headers, _ = await asgi_post(app, "/mcp", {**bearer, "accept": BOTH}, INITIALIZE)
    session = {**bearer, "accept": BOTH, "mcp-session-id": answer_headers["mcp-session-id"]}
    session["mcp-protocol-version"] = HANDSHAKE
    await asgi_post(app, "/mcp", session, INITIALIZED)
    plan = ["list", "note", "read", "read", "echo", "note", "read", "list", "info", "note"] * 2
    for n, step in enumerate(plan):
        if step == "list":
            body = {"jsonrpc": "2.0", "id": f"m{n}", "method": "tools/list"}
        elif step == "note":
            body = tool_call(f"m{n}", "append_note", {"text": f"n{n}"})
        elif step == "read":
            body = tool_call(f"m{n}", "read_notes", {})
        elif step == "info":
            body = tool_call(f"m{n}", "session_info", {})
        else:
            body = tool_call(f"m{n}", "echo", {"text": "hi"})
        status, _, raw = await asgi_post(app, "/mcp", session, body)
        assert status == 200, raw[:200]


def _cache_mix_row(aws: Any) -> dict[str, Any]:
    """The DAX stand-in's hit ratio over the agent's mix: which share of the table reads the item
    cache served (a DAX cluster's item cache would, with writers going through it)."""
    from local.dax_standin import ItemCacheStandIn

    counter = CallCounter()
    cache = ItemCacheStandIn(counter.attach(aws.client("dynamodb")))
    app = _counted_app(aws, counter, "", dax=cache)
    asyncio.run(_agent_mix(app))
    reads = sum(n for name, n in counter.calls.items() if "GetItem" in name)
    detail = (
        f"{cache.stats.hits} of {cache.stats.hits + cache.stats.misses} eventually consistent item reads served "
        f"from the item cache; {reads} reads reached the table over 20 calls "
        f"(list x4, read_notes x6, session_info x2, append_note x6, echo x2 in one 2025 session)"
    )
    return row("DAX item cache: hit ratio, an agent's 20 calls", round(cache.stats.hit_ratio, 2), 0, "ratio", detail)


def run() -> list[dict[str, Any]]:
    from tests.support.aws import fake_credentials
    from tests.support.endpoint import aws_stack

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request log
    with fake_credentials(), aws_stack() as aws:
        counter = CallCounter()
        task_queue = aws.client("sqs").create_queue(QueueName="bench-tasks")["QueueUrl"]
        app = _counted_app(aws, counter, task_queue)
        counted = asyncio.run(_operations(app, counter, aws))
        cache_row = _cache_mix_row(aws)
    rows = []
    for label, calls, note in counted:
        detail = ", ".join(f"{name}={n}" for name, n in sorted(calls.items())) or "none"
        rows.append(
            row(f"AWS calls: {label}", sum(calls.values()), 0, "calls", f"{detail}{'; ' + note if note else ''}")
        )
    return [*rows, cache_row]


if __name__ == "__main__":
    for line in run():
        print(line)
