"""Regression tests of issue 26 over HTTP, items 2, 3 and 4: what a client sends is admitted
before anything stores or recurses on it, and a task item always has room for its outcome.

* item 2: a task keeps the call's progress token, the client's capabilities and its answers
  (``ask_first``, ``tasks/update``): each is admitted like tool arguments (-32602, nothing
  written), and the worker's last write fits whatever the tool returned;
* item 3: one nesting limit where the body is parsed (64 levels, 400 + -32600), repeated keys
  refused, an encoded body 415;
* item 4: every malformed field of completion/complete is -32602.

The generated corpus over the same fields: ``test_bad_input_battery.py``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from examples import conformance
from local.functions import LambdaContext
from local.queue_poller import sqs_event_record
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.application.tasks.budget import OUTCOME_BUDGET_BYTES
from mcp_platform.bootstrap.worker import TaskHandler, build_handler
from mcp_platform.protocol.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, LIMIT_EXCEEDED
from mcp_platform.protocol.tasks import EXTENSION_ID
from mcp_platform.transport.messages import MAX_JSON_DEPTH
from tests.support import platform_tools, task_tools
from tests.support.endpoint import AwsStack, Instance, endpoint_instance
from tests.support.hostile import modern_headers, post
from tests.support.interactive import LEGACY, accept, modern_meta, open_legacy
from tests.support.mcp_http import CAPS_META, final_message, headers, initialize, sse_messages

pytestmark = pytest.mark.integration

TASKS_META = modern_meta({"extensions": {EXTENSION_ID: {}}, "elicitation": {}})
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
WORKER_ARN = "arn:aws:lambda:us-east-1:000000000000:function:task-worker"


@pytest.fixture(scope="module")
def queue(aws: AwsStack) -> str:
    return str(aws.client("sqs").create_queue(QueueName="tasks-bad-input")["QueueUrl"])


@pytest.fixture(scope="module")
def tasks(aws: AwsStack, queue: str) -> Iterator[Instance]:
    """An instance with the task worker deployed (its queue), 1 MiB bodies, the conformance tools."""
    options = {"MCP_TASK_QUEUE_URL": queue, "MCP_MAX_REQUEST_BYTES": "1048576"}
    with endpoint_instance(aws, extra_tools=(conformance, task_tools), **options) as running:
        yield running


@pytest.fixture(scope="module")
def worker(aws: AwsStack, queue: str) -> TaskHandler:
    settings = aws.settings(MCP_TASK_QUEUE_URL=queue)
    clients = {name: aws.client(name) for name in ("dynamodb", "kinesis", "sqs")}
    return build_handler(settings, platform_tools, conformance, task_tools, **clients)


def run_worker(aws: AwsStack, queue: str, worker: TaskHandler) -> list[dict[str, Any]]:
    """One invocation over what the queue holds, as the SQS mapping makes it; its batch item
    failures (each would be redelivered, and in the end dead-lettered). Handled ones are deleted."""
    sqs = aws.client("sqs")
    messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
    assert messages, "nothing was queued"
    records = [
        sqs_event_record(message, "arn:aws:sqs:us-east-1:000000000000:tasks", "us-east-1") for message in messages
    ]
    failures: list[dict[str, Any]] = worker({"Records": records}, LambdaContext("task-worker", WORKER_ARN, 1024, 900))[
        "batchItemFailures"
    ]
    failed = {failure["itemIdentifier"] for failure in failures}
    for record in records:
        if record["messageId"] not in failed:
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=record["receiptHandle"])
    return failures


def modern(instance: Instance, key: str, method: str, params: dict[str, Any], request_id: Any = 9) -> httpx.Response:
    """A 2026 request as a careless client sends it (lone surrogates, NaN), its mirror headers set."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    header_list = modern_headers(key, method, params)
    if method.startswith("tasks/"):
        header_list.append(("Mcp-Name", str(params["taskId"])))
    return post(instance.url, header_list, body)


def task_items(aws: AwsStack) -> set[str]:
    items = aws.client("dynamodb").scan(TableName=aws.table, ConsistentRead=True)["Items"]
    return {item["pk"]["S"] for item in items if item["pk"]["S"].startswith(ts.TASK_PREFIX)}


def open_handle(instance: Instance, key: str) -> str:
    answer = final_message(
        modern(instance, key, "tools/call", {"name": "open_session", "arguments": {}, "_meta": CAPS_META})
    )
    return str(answer["result"]["structuredContent"]["session"])


def refused_invalid_params(response: httpx.Response, statuses: tuple[int, ...] = (200, 400)) -> str:
    """-32602: a 400 when refused before the work starts, else the error ending its stream (the
    answers to a round are checked as the run meets its questions)."""
    assert response.status_code in statuses, (response.status_code, response.text[:300])
    error = final_message(response)["error"]
    assert error["code"] == INVALID_PARAMS, error
    return str(error["message"])


def nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


# -- item 2: what a task keeps of the client's is admitted first ---------------------------------------
@pytest.mark.parametrize(
    "token",
    [math.nan, 1e400, 10**200, 1e-200, "x\ud800", "t" * 700_000, {"a": 1}, True],
    ids=["nan", "1e400", "10**200", "1e-200", "lone-surrogate", "700KB", "object", "boolean"],
)
def test_a_task_with_an_unstorable_progress_token_is_invalid_params_and_writes_nothing(
    tasks: Instance, aws: AwsStack, api_key: str, token: Any
) -> None:
    """Given session_report with the tasks extension and an odd _meta.progressToken (each of
    these answered -32603 after the task write failed, or wrote a task its outcome could not
    join), Then 400 -32602 naming the token, and no task item."""
    handle = open_handle(tasks, api_key)
    before = task_items(aws)
    meta = {**TASKS_META, "progressToken": token}
    params = {"name": "session_report", "arguments": {"session": handle}, "_meta": meta}
    assert "progressToken" in refused_invalid_params(modern(tasks, api_key, "tools/call", params), (400,))
    assert task_items(aws) == before


@pytest.mark.parametrize(
    "extension",
    [{"x": math.nan}, {"x": 10**200}, {"x\ud800": 1}, {"pad": "p" * 5000}],
    ids=["nan", "10**200", "lone-surrogate-key", "5KB"],
)
def test_a_task_with_unstorable_client_capabilities_is_invalid_params_and_writes_nothing(
    tasks: Instance, aws: AwsStack, api_key: str, extension: dict[str, Any]
) -> None:
    """The same rules as 2025 initialize (storable, at most 4 KiB): the task keeps them."""
    handle = open_handle(tasks, api_key)
    before = task_items(aws)
    meta = {**TASKS_META, CAPABILITIES: {"extensions": {EXTENSION_ID: extension}}}
    params = {"name": "session_report", "arguments": {"session": handle}, "_meta": meta}
    assert CAPABILITIES in refused_invalid_params(modern(tasks, api_key, "tools/call", params), (400,))
    assert task_items(aws) == before


ODD_ANSWERS = [
    accept(name=math.nan),
    accept(name=10**200),
    accept(name="x\ud800"),
    {"action": "accept", "content": {"\ud800": "k"}},
    accept(name=nested(33)),
]
ODD_IDS = ["nan", "10**200", "lone-surrogate", "lone-surrogate-key", "33-levels"]


@pytest.mark.parametrize("answer", ODD_ANSWERS, ids=ODD_IDS)
def test_an_unstorable_ask_first_answer_is_invalid_params_and_no_task_starts(
    tasks: Instance, aws: AwsStack, api_key: str, answer: dict[str, Any]
) -> None:
    """Given test_tool_with_task's question answered (with its requestState) by a value the task
    could not store, Then 400 -32602 naming the answer, and no task item."""
    params: dict[str, Any] = {"name": "test_tool_with_task", "arguments": {}, "_meta": TASKS_META}
    asked = final_message(modern(tasks, api_key, "tools/call", params))
    assert asked["result"]["resultType"] == "input_required", asked
    before = task_items(aws)
    retry = {**params, "requestState": asked["result"]["requestState"], "inputResponses": {"user_name": answer}}
    assert "inputResponses.user_name" in refused_invalid_params(modern(tasks, api_key, "tools/call", retry))
    assert task_items(aws) == before


def test_unstorable_tasks_update_answers_are_invalid_params_and_the_task_still_reads(
    tasks: Instance, aws: AwsStack, queue: str, worker: TaskHandler, api_key: str
) -> None:
    """Given multi_input waiting for its two answers (the worker ran it), When tasks/update sends
    each odd answer, Then 400 -32602 each time, and the task still reads input_required with both
    questions; a good answer then completes it, with no redelivery."""
    created = final_message(
        modern(tasks, api_key, "tools/call", {"name": "multi_input", "arguments": {}, "_meta": TASKS_META})
    )
    task_id = created["result"]["taskId"]
    assert run_worker(aws, queue, worker) == []
    get = {"taskId": task_id, "_meta": TASKS_META}
    for answer in ODD_ANSWERS:
        update = {"taskId": task_id, "inputResponses": {"name": answer}, "_meta": TASKS_META}
        assert "inputResponses" in refused_invalid_params(modern(tasks, api_key, "tasks/update", update))
        waiting = final_message(modern(tasks, api_key, "tasks/get", get))["result"]
        assert waiting["status"] == "input_required" and set(waiting["inputRequests"]) == {"name", "confirm"}
    answers = {"name": accept(name="Ada"), "confirm": accept(confirm=True)}
    update = {"taskId": task_id, "inputResponses": answers, "_meta": TASKS_META}
    assert final_message(modern(tasks, api_key, "tasks/update", update))["result"]["resultType"] == "complete"
    assert run_worker(aws, queue, worker) == []
    done = final_message(modern(tasks, api_key, "tasks/get", get))["result"]
    assert done["status"] == "completed" and "Ada" in done["result"]["content"][0]["text"]


def test_answers_beyond_what_a_task_keeps_are_limit_exceeded(
    tasks: Instance, aws: AwsStack, queue: str, worker: TaskHandler, api_key: str
) -> None:
    """Each answer storable, together over the task's answer budget (64 KiB): -31005 naming the
    limit, and the task still waits for them."""
    created = final_message(
        modern(tasks, api_key, "tools/call", {"name": "multi_input", "arguments": {}, "_meta": TASKS_META})
    )
    task_id = created["result"]["taskId"]
    assert run_worker(aws, queue, worker) == []
    answers = {"name": accept(name="n" * 40_000), "confirm": accept(confirm=True, note="c" * 40_000)}
    update = {"taskId": task_id, "inputResponses": answers, "_meta": TASKS_META}
    response = modern(tasks, api_key, "tasks/update", update)
    assert response.status_code == 200, response.text[:300]  # -31005 is not an HTTP-level refusal
    error = response.json()["error"]
    assert error["code"] == LIMIT_EXCEEDED and error["data"]["limit"] == "task_answers_bytes", error
    waiting = final_message(modern(tasks, api_key, "tasks/get", {"taskId": task_id, "_meta": TASKS_META}))
    assert waiting["result"]["status"] == "input_required"


def test_a_task_result_too_large_to_keep_is_recorded_as_a_clear_error_without_redelivery(
    tasks: Instance, aws: AwsStack, queue: str, worker: TaskHandler, api_key: str
) -> None:
    """Given a task whose request is as large as a call's arguments may be (about 120 KB) and
    whose tool returns 300 KB (the item would pass DynamoDB's 400 KB: the worker's last write
    failed and the message came back until the DLQ), Then the worker records the task failed
    with -31005 naming the limit, and reports no batch item failure."""
    arguments = {"padding": "p" * 120_000, "size": 300_000}
    params = {"name": "sized_result", "arguments": arguments, "_meta": TASKS_META}
    created = final_message(modern(tasks, api_key, "tools/call", params))
    assert created["result"]["resultType"] == "task", created
    assert run_worker(aws, queue, worker) == []
    found = final_message(
        modern(tasks, api_key, "tasks/get", {"taskId": created["result"]["taskId"], "_meta": TASKS_META})
    )
    task = found["result"]
    assert task["status"] == "failed", task
    assert task["error"]["code"] == LIMIT_EXCEEDED and task["error"]["data"]["limit"] == "task_result_bytes"
    assert str(OUTCOME_BUDGET_BYTES) in task["error"]["message"]


def test_a_result_within_the_outcome_budget_completes_the_largest_task(
    tasks: Instance, aws: AwsStack, queue: str, worker: TaskHandler, api_key: str
) -> None:
    """The budgets hold together: the largest request and a result just inside its budget."""
    arguments = {"padding": "p" * 120_000, "size": OUTCOME_BUDGET_BYTES - 1024}
    params = {"name": "sized_result", "arguments": arguments, "_meta": {**TASKS_META, "progressToken": "t" * 200}}
    created = final_message(modern(tasks, api_key, "tools/call", params))
    assert run_worker(aws, queue, worker) == []
    found = final_message(
        modern(tasks, api_key, "tasks/get", {"taskId": created["result"]["taskId"], "_meta": TASKS_META})
    )
    assert found["result"]["status"] == "completed", found["result"].get("error")


# -- item 3: one nesting limit, where the body is parsed ----------------------------------------------
def refused_at_parse(response: httpx.Response) -> None:
    assert response.status_code == 400, (response.status_code, response.text[:300])
    error = response.json()["error"]
    assert error["code"] == INVALID_REQUEST and f"{MAX_JSON_DEPTH} levels" in error["message"], error


def test_deep_arguments_are_400_invalid_request_in_both_eras(tasks: Instance, api_key: str) -> None:
    """Given arguments nested 990 levels (a 503 "retry later" before: RecursionError where the
    arguments were digested), Then 400 -32600 naming the limit, in both eras, for a session tool
    and for one without a session."""
    handle = open_handle(tasks, api_key)
    for name, arguments in (("append_note", {"session": handle, "text": nested(990)}), ("echo", {"x": nested(990)})):
        params = {"name": name, "arguments": arguments, "_meta": CAPS_META}
        refused_at_parse(modern(tasks, api_key, "tools/call", params))
        session_id = initialize(tasks.url, api_key)
        legacy = [*headers(api_key, **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": LEGACY}).items()]
        body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        refused_at_parse(post(tasks.url, legacy, body))


def test_a_deep_prompt_round_and_a_deep_2025_response_are_400_invalid_request(tasks: Instance, api_key: str) -> None:
    """prompts/get with a requestState and 990-level arguments; a 2025 client response nested
    990 levels: both refused where the body is parsed."""
    params = {"name": "test_prompt_with_arguments", "arguments": {"arg1": nested(990)}, "requestState": "s1.k.x.y"}
    refused_at_parse(modern(tasks, api_key, "prompts/get", {**params, "_meta": CAPS_META}))
    session_headers = open_legacy(tasks.url, api_key)
    reply = {"jsonrpc": "2.0", "id": "srv-" + "A" * 22, "result": {"action": "accept", "content": nested(990)}}
    refused_at_parse(post(tasks.url, session_headers.items(), reply))


def test_nesting_up_to_the_limit_reaches_the_method(tasks: Instance, api_key: str) -> None:
    """The limit counts the message object as level 1: arguments whose value takes the body to
    exactly 64 levels are answered by the tool (here: not a string), one more level by the parser."""
    at_limit = {"name": "echo", "arguments": {"text": nested(MAX_JSON_DEPTH - 3)}, "_meta": CAPS_META}
    answer = final_message(modern(tasks, api_key, "tools/call", at_limit))
    assert answer["result"]["isError"] and "arguments.text" in answer["result"]["content"][0]["text"]
    over = {**at_limit, "arguments": {"text": nested(MAX_JSON_DEPTH - 2)}}
    refused_at_parse(modern(tasks, api_key, "tools/call", over))


def test_a_repeated_key_is_400_invalid_request_naming_it(tasks: Instance, api_key: str) -> None:
    """Given echo's ``text`` twice (the last won: the tool echoed "b", while a proxy or an audit
    reading the first saw "a"), Then 400 -32600 naming the key, the request's id echoed; the same
    key in two objects, and colons inside strings, are fine."""
    meta = json.dumps(CAPS_META)
    body = '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo",'
    body += f'"arguments":{{"text":"a: 1","text":"b"}},"_meta":{meta}}}}}'
    header_list = modern_headers(api_key, "tools/call", {"name": "echo"})
    response = httpx.post(tasks.url, headers=header_list, content=body.encode())
    assert response.status_code == 400, response.text[:300]
    error = response.json()
    assert error["id"] == 4 and error["error"]["code"] == INVALID_REQUEST and "'text'" in error["error"]["message"]
    fine = {"name": "echo", "arguments": {"text": "text: x"}, "_meta": CAPS_META}
    assert final_message(modern(tasks, api_key, "tools/call", fine))["result"]["isError"] is False


def test_an_encoded_body_is_415_naming_the_coding_accepted(tasks: Instance, api_key: str) -> None:
    """Given Content-Encoding: gzip (the body was read as if the header were absent), Then 415
    with Accept-Encoding: identity; an explicit identity coding is fine."""
    ping = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}},
    }
    encoded = post(tasks.url, [*headers(api_key).items(), ("Content-Encoding", "gzip")], ping)
    assert encoded.status_code == 415 and encoded.headers["accept-encoding"] == "identity", encoded.text
    assert post(tasks.url, [*headers(api_key).items(), ("Content-Encoding", "identity")], ping).status_code == 200


# -- item 4: completion/complete ----------------------------------------------------------------------
PROMPT_REF = {"type": "ref/prompt", "name": "test_prompt_with_arguments"}
MALFORMED_COMPLETIONS = [
    {"context": {"arguments": 5}},
    {"context": {"arguments": "ab"}},
    {"context": {"arguments": [1, 2]}},
    {"context": {"arguments": {"arg2": 7}}},
    {"context": "ab"},
    {"argument": {"name": "arg1", "value": 5}},
    {"argument": {"name": 5, "value": "a"}},
    {"argument": "arg1"},
    {"ref": {"type": "ref/prompt", "name": 5}},
    {"ref": {"type": "ref/resource", "uri": ["x"]}},
    {"ref": {"type": "ref/other"}},
    {"ref": "ref/prompt"},
]


@pytest.mark.parametrize("malformed", MALFORMED_COMPLETIONS, ids=[json.dumps(m) for m in MALFORMED_COMPLETIONS])
def test_every_malformed_completion_field_is_invalid_params_in_both_eras(
    tasks: Instance, api_key: str, malformed: dict[str, Any]
) -> None:
    """context.arguments 5, "ab" or [1, 2] answered -32603 (``dict(known or {})``); now each
    malformed field is -32602, in the 2026 (400) and the 2025 (200) answers alike."""
    params = {"ref": PROMPT_REF, "argument": {"name": "arg1", "value": "pa"}, **malformed}
    refused_invalid_params(modern(tasks, api_key, "completion/complete", {**params, "_meta": CAPS_META}))
    session_id = initialize(tasks.url, api_key)
    legacy = headers(api_key, **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": LEGACY})
    body = {"jsonrpc": "2.0", "id": 5, "method": "completion/complete", "params": params}
    answer = sse_messages(post(tasks.url, legacy.items(), body))[-1]
    assert answer["error"]["code"] == INVALID_PARAMS, answer
    well_formed = {
        "ref": PROMPT_REF,
        "argument": {"name": "arg1", "value": "pa"},
        "context": {"arguments": {"arg2": "x"}},
    }
    found = final_message(modern(tasks, api_key, "completion/complete", {**well_formed, "_meta": CAPS_META}))
    assert found["result"]["completion"]["values"] == ["paris", "park", "party"]
