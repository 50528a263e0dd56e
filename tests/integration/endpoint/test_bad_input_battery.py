"""The bad-input battery: a generated corpus of hostile and careless requests, both eras, every
method the server serves and every tool, resource template and prompt it lists, spread over two
endpoint instances on one emulator.

The corpus is grouped (era x method, one group per tool) so every group is exercised whatever
the count; each group also replays the exact requests of issue 12 that concern it. Properties,
over the whole corpus: no 5xx, no -32603, no error or traceback logged, both instances healthy
afterwards (``/healthz`` and a normal session call), and every change stored in the session
table processed by the audit function's logic (none would reach the audit DLQ).

A second corpus (issue 26) puts odd values in every client field the server stores: a task's
progress token, capabilities and answers, a 2025 client response, a subscribed URI (and
completion/complete); it also runs the task worker over what was queued.

Fixed seed (``derandomize``), no example database, a bounded count per group. A larger run::

    BAD_INPUT_EXAMPLES=100 .venv/bin/python -m pytest -q tests/integration/endpoint/test_bad_input_battery.py
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from examples import conformance
from local.functions import LambdaContext
from local.queue_poller import sqs_event_record
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.adapters.dynamodb.tasks import TaskStore
from mcp_platform.bootstrap.worker import TaskHandler, build_handler
from mcp_platform.protocol.jsonrpc import INTERNAL_ERROR
from tests.support import platform_tools
from tests.support.audit_stream import audit_everything
from tests.support.aws import fake_credentials
from tests.support.bad_input import TASK_META, Case, body, groups, send, stored_groups
from tests.support.endpoint import AwsStack, Instance, aws_stack, endpoint_instance
from tests.support.hostile import modern_headers, post
from tests.support.interactive import ALL_CAPS, open_legacy
from tests.support.mcp_http import CAPS_META, final_message, initialize, sse_messages
from tests.support.tables import audit_table_definition

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXAMPLES = int(os.environ.get("BAD_INPUT_EXAMPLES", "8"))  # per group (26 groups)
STORED_EXAMPLES = int(os.environ.get("BAD_INPUT_EXAMPLES", "16"))  # per group of stored fields (8 groups)


@pytest.fixture()
def aws() -> Iterator[AwsStack]:
    """A fresh emulator per run: the corpus's writes stay out of other tests' tables."""
    with fake_credentials(), aws_stack() as stack:
        stack.client("dynamodb").create_table(**audit_table_definition(f"{stack.table}-audit"))
        yield stack


@pytest.fixture()
def pair(aws: AwsStack) -> Iterator[tuple[Instance, Instance]]:
    options = {"MCP_MAX_REQUEST_BYTES": "1048576", "AUDIT_TABLE_NAME": f"{aws.table}-audit"}
    with endpoint_instance(aws, **options) as a, endpoint_instance(aws, **options) as b:
        yield a, b


def modern_request(instance: Instance, key: str, method: str, params: dict[str, Any]) -> httpx.Response:
    return post(instance.url, modern_headers(key, method, params), body(9, method, params))


def tool_call(instance: Instance, key: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": CAPS_META}
    return final_message(modern_request(instance, key, "tools/call", params))


def check_answer(response: httpx.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    if response.content:
        for message in sse_messages(response):
            assert message.get("error", {}).get("code") != INTERNAL_ERROR, message


def healthy(instance: Instance, key: str) -> None:
    assert httpx.get(instance.url.replace("/mcp", "/healthz")).status_code == 200
    handle = tool_call(instance, key, "open_session", {})["result"]["structuredContent"]["session"]
    appended = tool_call(instance, key, "append_note", {"session": handle, "text": "after"})
    assert appended["result"]["isError"] is False, appended
    read = tool_call(instance, key, "read_notes", {"session": handle})
    assert read["result"]["structuredContent"]["notes"] == [{"role": "note", "text": "after"}]


def run_group(
    strategy: st.SearchStrategy[Case], reported: list[Case], one: Callable[[Case], None], examples: int = EXAMPLES
) -> None:
    run = given(strategy)(one)
    for item in reported:
        run = example(item)(run)
    settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )(run)()


def test_generated_bad_input_never_breaks_either_instance_or_the_audit(
    aws: AwsStack, pair: tuple[Instance, Instance], caplog: pytest.LogCaptureFixture
) -> None:
    key = ApiKeyStore(aws.table, aws.client("dynamodb")).mint("alice")
    a, b = pair

    def listing(method: str, field: str) -> list[dict[str, Any]]:
        response = modern_request(a, key, method, {"_meta": CAPS_META})
        assert response.status_code == 200, response.text
        return list(response.json()["result"][field])

    opened = [tool_call(a, key, "open_session", {})["result"]["structuredContent"]["session"] for _ in range(2)]
    offer = {
        "tools": listing("tools/list", "tools"),
        "templates": listing("resources/templates/list", "resourceTemplates"),
        "prompts": listing("prompts/list", "prompts"),
        "handles": [*opened, "A" * 32, "x" * 3000, "short"],
    }
    transport = [initialize(a.url, key), initialize(b.url, key)]
    sent = [0]

    def one_request(item: Case) -> None:
        instance = pair[sent[0] % 2]
        sent[0] += 1
        check_answer(send(instance, key, item, transport[sent[0] % 2]))

    caplog.set_level(logging.WARNING)
    corpus = groups(offer)
    for _, strategy, reported in corpus:
        run_group(strategy, reported, one_request)
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not logged, [f"{r.name}: {r.getMessage()}" for r in logged[:5]]
    healthy(a, key)
    healthy(b, key)
    outcomes = audit_everything(aws)  # raises on a record the audit function could not process
    assert len(corpus) >= 2 * len(offer["tools"]) and sent[0] > len(corpus) and outcomes


# -- issue 26: odd values in every client-supplied field that is stored ---------------------------------
WORKER_ARN = "arn:aws:lambda:us-east-1:000000000000:function:task-worker"
QUEUE_ARN = "arn:aws:sqs:us-east-1:000000000000:tasks"
WAITING_TASKS = 3  # multi_input tasks waiting for answers: what tasks/update cases answer


@pytest.fixture()
def queue(aws: AwsStack) -> str:
    return str(aws.client("sqs").create_queue(QueueName="tasks-battery")["QueueUrl"])


@pytest.fixture()
def storing_pair(aws: AwsStack, queue: str) -> Iterator[tuple[Instance, Instance]]:
    """Two instances storing all there is: tasks (the worker's queue), subscriptions, the 2025
    reply items; a 2025 call waits 5 s at most for its client's answer."""
    options = {
        "MCP_MAX_REQUEST_BYTES": "1048576",
        "AUDIT_TABLE_NAME": f"{aws.table}-audit",
        "MCP_TASK_QUEUE_URL": queue,
        "MCP_SUBSCRIPTIONS": "true",
        "MCP_CLIENT_REQUEST_TIMEOUT_SECONDS": "5",
    }
    tools = (conformance,)
    with (
        endpoint_instance(aws, extra_tools=tools, **options) as a,
        endpoint_instance(aws, extra_tools=tools, **options) as b,
    ):
        yield a, b


def run_worker(aws: AwsStack, queue: str, worker: TaskHandler) -> int:
    """Invocations over the queue until it is empty, as the SQS mapping makes them; every batch
    item failure (a redelivery, in the end a DLQ message) fails the test. Returns the count run."""
    sqs, handled = aws.client("sqs"), 0
    while messages := sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", []):
        records = [sqs_event_record(message, QUEUE_ARN, "us-east-1") for message in messages]
        response = worker({"Records": records}, LambdaContext("task-worker", WORKER_ARN, 1024, 900))
        assert response["batchItemFailures"] == [], response
        for record in records:
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=record["receiptHandle"])
        handled += len(records)
    return handled


def modern_post(instance: Instance, key: str, method: str, params: Any) -> httpx.Response:
    header_list = modern_headers(key, method, params)
    if method.startswith("tasks/") and isinstance(params, dict) and isinstance(params.get("taskId"), str):
        header_list.append(("Mcp-Name", params["taskId"]))
    return post(instance.url, header_list, body(11, method, params))


def answer_a_server_request(
    asker: Instance, receiver: Instance, session: dict[str, str], reply: dict[str, Any]
) -> None:
    """A 2025 call of test_elicitation on ``asker``; its question answered with ``reply`` posted
    to ``receiver``. Neither answer may be a 5xx or -32603, and the call must end."""
    call = {"jsonrpc": "2.0", "id": 21, "method": "tools/call",
            "params": {"name": "test_elicitation", "arguments": {"message": "Name?"}}}  # fmt: skip
    with httpx.stream("POST", asker.url, headers=session, json=call, timeout=30) as stream:
        assert stream.status_code < 500
        final = None
        for line in stream.iter_lines():
            if not line.startswith("data:"):
                continue
            message = json.loads(line[5:])
            if message.get("method") == "elicitation/create":
                check_answer(post(receiver.url, session.items(), {"jsonrpc": "2.0", "id": message["id"], **reply}))
            elif message.get("id") == 21:
                final = message
                break
    assert final is not None and final.get("error", {}).get("code") != INTERNAL_ERROR, final


def test_generated_odd_values_in_every_stored_field_never_break_either_era(
    aws: AwsStack, queue: str, storing_pair: tuple[Instance, Instance], caplog: pytest.LogCaptureFixture
) -> None:
    """Given two instances that store tasks, subscriptions and 2025 replies, When a generated
    corpus puts odd values (NaN, 10**200, lone surrogates, 700 KB, deep or foreign shapes) in every
    client field that is stored (issue 26: progress tokens, capabilities, ask_first and
    tasks/update answers, 2025 responses, subscribed URIs) and in completion/complete, Then no
    answer is a 5xx or -32603, nothing is logged as an error, the worker runs every queued task
    without a batch item failure (no redelivery, no DLQ message), every task reads back, the
    producer's DLQ is empty and every change stored is processed by the audit function's logic."""
    key = ApiKeyStore(aws.table, aws.client("dynamodb")).mint("alice")
    a, b = storing_pair
    clients = {name: aws.client(name) for name in ("dynamodb", "kinesis", "sqs")}
    worker = build_handler(aws.settings(MCP_TASK_QUEUE_URL=queue), platform_tools, conformance, **clients)
    handle = tool_call(a, key, "open_session", {})["result"]["structuredContent"]["session"]
    waiting = []
    for _ in range(WAITING_TASKS):
        created = final_message(
            modern_post(a, key, "tools/call", {"name": "multi_input", "arguments": {}, "_meta": TASK_META})
        )
        waiting.append(created["result"]["taskId"])
    run_worker(aws, queue, worker)  # each now waits for its two answers
    transport = [initialize(a.url, key), initialize(b.url, key)]
    asking = open_legacy(a.url, key, ALL_CAPS)
    sent = [0]

    def one_request(item: Case) -> None:
        instance, other = storing_pair[sent[0] % 2], storing_pair[(sent[0] + 1) % 2]
        sent[0] += 1
        kind = item.get("kind", "plain")
        if kind == "plain":
            check_answer(send(instance, key, item, transport[sent[0] % 2]))
        elif kind == "ask_first":
            first = {"name": "test_tool_with_task", "arguments": {}, "_meta": TASK_META}
            asked = final_message(modern_post(instance, key, "tools/call", first))["result"]
            retry = {**first, "requestState": asked["requestState"], "inputResponses": item["params"]}
            check_answer(modern_post(other, key, "tools/call", retry))
        elif kind == "update":
            task_id = waiting[sent[0] % WAITING_TASKS]
            update = {"taskId": task_id, "inputResponses": item["params"], "_meta": TASK_META}
            check_answer(modern_post(instance, key, "tasks/update", update))
        else:
            answer_a_server_request(instance, other, asking, item["params"])

    caplog.set_level(logging.WARNING)
    corpus = stored_groups(handle)
    for _, strategy, reported in corpus:
        run_group(strategy, reported, one_request, STORED_EXAMPLES)
    assert run_worker(aws, queue, worker) > 0  # what the corpus queued: tasks and answered rounds
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not logged, [f"{r.name}: {r.getMessage()}" for r in logged[:5]]
    items = aws.client("dynamodb").scan(TableName=aws.table, ConsistentRead=True)["Items"]
    task_ids = [
        item["pk"]["S"].removeprefix(ts.TASK_PREFIX) for item in items if item["pk"]["S"].startswith(ts.TASK_PREFIX)
    ]
    tasks = TaskStore(aws.table, a.endpoint.store.gateway)
    assert len(task_ids) > WAITING_TASKS and all(tasks.get(task_id).owner == "alice" for task_id in task_ids)
    for task_id in task_ids:
        check_answer(modern_post(b, key, "tasks/get", {"taskId": task_id, "_meta": TASK_META}))
    assert aws.client("sqs").receive_message(QueueUrl=aws.dlq_url).get("Messages", []) == []
    assert audit_everything(aws)  # raises on a record the audit function could not process
    healthy(a, key)
    healthy(b, key)
