"""Tasks extension over two endpoint instances and the task worker, on one emulator (a fresh one
per test): the worker is the real handler fed by the real queue (the local SQS mapping: delete
on success, redelivery after the visibility timeout, redrive to the DLQ).

Each fault test has a control beside it that runs the same scenario against a naive version
(a cancel the running tool never hears of, a call id minted per attempt, a handler that
swallows what it cannot handle) and shows the same assertions fail.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from examples import conformance
from local.functions import LambdaContext
from local.queue_poller import QueuePoller
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.tasks import TaskStore
from mcp_platform.application.task_worker import TaskWorker
from mcp_platform.bootstrap.worker import build_handler
from mcp_platform.protocol.tasks import EXTENSION_ID
from tests.support import platform_tools, task_tools
from tests.support.endpoint import AwsStack, Instance, alice_and_bob, endpoint_instance, fresh_stack
from tests.support.interactive import modern_meta, open_legacy, tool_request
from tests.support.mcp_http import final_message, headers, modern_call
from tests.support.task_tools import long_tasks

pytestmark = pytest.mark.integration
TASKS: dict[str, Any] = {"extensions": {EXTENSION_ID: {}}}
MAX_ATTEMPTS = 3
MAX_RECEIVES = MAX_ATTEMPTS + 2  # as the stack sets it (stacks/tasks.py)
WORKER_ARN = "arn:aws:lambda:us-east-1:000000000000:function:task-worker"


@dataclass
class Queues:
    url: str
    arn: str
    dlq_url: str


aws = pytest.fixture(fresh_stack, name="aws")  # a fresh emulator per test


@pytest.fixture()
def queues(aws: AwsStack) -> Queues:
    """The task queue as the stack builds it, with a 1 s visibility timeout so a redelivery
    after a worker crash happens within the test."""
    sqs = aws.client("sqs")
    suffix = uuid.uuid4().hex[:8]
    dlq_url = sqs.create_queue(QueueName=f"task-dlq-{suffix}")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": MAX_RECEIVES})
    url = sqs.create_queue(
        QueueName=f"tasks-{suffix}", Attributes={"VisibilityTimeout": "1", "RedrivePolicy": redrive}
    )["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return Queues(url, arn, dlq_url)


keys = pytest.fixture(alice_and_bob, name="keys")


def task_settings(aws: AwsStack, queues: Queues) -> dict[str, str]:
    return {"MCP_TASK_QUEUE_URL": queues.url, "MCP_TASK_MAX_ATTEMPTS": str(MAX_ATTEMPTS)}


@pytest.fixture()
def pair(aws: AwsStack, queues: Queues) -> Iterator[tuple[Instance, Instance]]:
    tools = (conformance, task_tools)
    with (
        endpoint_instance(aws, extra_tools=tools, **task_settings(aws, queues)) as a,
        endpoint_instance(aws, extra_tools=tools, **task_settings(aws, queues)) as b,
    ):
        yield a, b


@pytest.fixture()
def worker(aws: AwsStack, queues: Queues) -> Iterator[None]:
    """The task worker's handler, polled from the queue in a thread (one environment)."""
    long_tasks.RUNS.clear()
    long_tasks.STARTED.clear()
    long_tasks.SAW_CANCEL.clear()
    handler = build_handler(
        aws.settings(**task_settings(aws, queues)),
        platform_tools,
        conformance,
        task_tools,
        dynamodb=aws.client("dynamodb"),
        kinesis=aws.client("kinesis"),
        sqs=aws.client("sqs"),
    )

    def invoke(event: dict[str, Any]) -> Any:
        return handler(event, LambdaContext("task-worker", WORKER_ARN, 1024, 900))

    stop = threading.Event()
    poller = QueuePoller(
        "task-worker", aws.client("sqs"), queues.url, queues.arn, invoke, batch_size=1, region="us-east-1", stop=stop
    )
    poller.start()
    yield
    stop.set()
    poller.join(timeout=30)  # a run still going (a control's ignored cancel) ends first
    assert not poller.is_alive(), "the worker kept running past the test"


def rpc(url: str, key: str, method: str, params: dict[str, Any], caps: dict[str, Any] | None = None) -> Any:
    body = {**params, "_meta": modern_meta(TASKS if caps is None else caps)}
    return final_message(modern_call(url, key, 1, method, body))


def start(url: str, key: str, name: str, arguments: dict[str, Any]) -> str:
    created = rpc(url, key, "tools/call", {"name": name, "arguments": arguments})
    assert created["result"]["resultType"] == "task", created
    return str(created["result"]["taskId"])


def status(url: str, key: str, task_id: str) -> dict[str, Any]:
    answer = rpc(url, key, "tasks/get", {"taskId": task_id})
    assert "result" in answer, answer
    found: dict[str, Any] = answer["result"]
    return found


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def terminal(url: str, key: str, task_id: str, seconds: float = 15) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def done() -> bool:
        found.update(status(url, key, task_id))
        return found["status"] in ("completed", "failed", "cancelled")

    wait_for(done, seconds, f"task {task_id} to finish")
    return found


# -- created on A, polled on B, cancelled on A while the worker runs it ----------------------------
def assert_cancel_reaches_the_running_tool(pair: tuple[Instance, Instance], key: str) -> None:
    a, b = pair
    task_id = start(a.url, key, "patient_task", {"tag": "cancel-me", "seconds": 9})
    assert status(b.url, key, task_id)["status"] == "working"  # durable before the answer: B reads it
    wait_for(lambda: "cancel-me" in long_tasks.STARTED, 10, "the worker to start the tool")
    ack = rpc(a.url, key, "tasks/cancel", {"taskId": task_id})
    assert ack["result"]["resultType"] == "complete" and "taskId" not in ack["result"], ack
    assert status(b.url, key, task_id)["status"] == "cancelled"
    wait_for(lambda: "cancel-me" in long_tasks.SAW_CANCEL, 6, "the running tool to see its cancellation")


def test_a_task_created_on_a_is_polled_on_b_and_cancelled_on_a_while_the_worker_runs_it(
    pair: tuple[Instance, Instance], keys: dict[str, str], worker: None
) -> None:
    """Given a task created on A and running in the worker, when B polls it and A cancels it,
    then B sees it working then cancelled, and the running tool sees ``ctx.cancelled``."""
    assert_cancel_reaches_the_running_tool(pair, keys["alice"])


def test_control_a_cancel_that_only_marks_the_item_never_reaches_the_running_tool(
    pair: tuple[Instance, Instance], keys: dict[str, str], monkeypatch: pytest.MonkeyPatch, worker: None
) -> None:
    async def never_watch(self: TaskWorker, *args: Any) -> None:
        return None

    monkeypatch.setattr(TaskWorker, "_watch", never_watch)
    with pytest.raises(AssertionError, match="the running tool to see its cancellation"):
        assert_cancel_reaches_the_running_tool(pair, keys["alice"])


# -- a worker crash after the commit: retried, the tool does not run twice ------------------------
def open_handle(url: str, key: str) -> str:
    opened = rpc(url, key, "tools/call", {"name": "open_session", "arguments": {}})
    return str(opened["result"]["structuredContent"]["session"])


def crash_once_after_the_commit(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The worker dies between the session commit and recording the task's outcome, once."""
    crashes: list[str] = []
    real_finish = TaskStore.finish

    def finish(self: TaskStore, task_id: str, status: str, **outcome: Any) -> Any:
        if status == "completed" and not crashes:
            crashes.append(task_id)
            raise ConnectionError("the worker's environment went away")
        return real_finish(self, task_id, status, **outcome)

    monkeypatch.setattr(TaskStore, "finish", finish)
    return crashes


def assert_one_run_one_note(pair: tuple[Instance, Instance], aws: AwsStack, key: str, crashes: list[str]) -> None:
    a, b = pair
    handle = open_handle(a.url, key)
    task_id = start(a.url, key, "noted_task", {"tag": "once", "session": handle})
    done = terminal(b.url, key, task_id)
    assert crashes == [task_id], "the crash was not injected"
    assert done["status"] == "completed", done
    session = a.endpoint.server.services.store.get_session(handle, owner="alice", consistent=True)
    notes = [m for m in session.context if m.get("text") == "once"]
    assert long_tasks.RUNS["once"] == 1 and len(notes) == 1, f"ran {long_tasks.RUNS['once']}x, {len(notes)} notes"
    assert done["result"]["structuredContent"] == {"run": 1}


def test_a_worker_crash_after_the_commit_is_retried_without_running_the_tool_twice(
    pair: tuple[Instance, Instance], aws: AwsStack, keys: dict[str, str], monkeypatch: pytest.MonkeyPatch, worker: None
) -> None:
    """Given a session task whose worker crashes after the commit, when SQS redelivers it, then
    the retry replays the committed call (its marker, D4): one run, one note, completed."""
    assert_one_run_one_note(pair, aws, keys["alice"], crash_once_after_the_commit(monkeypatch))


def test_control_a_call_id_minted_per_attempt_runs_the_tool_twice(
    pair: tuple[Instance, Instance], aws: AwsStack, keys: dict[str, str], monkeypatch: pytest.MonkeyPatch, worker: None
) -> None:
    crashes = crash_once_after_the_commit(monkeypatch)
    real_begin = TaskStore.begin_attempt

    def fresh_id_per_attempt(self: TaskStore, task_id: str) -> Any:
        task = real_begin(self, task_id)
        task.request.tool_call_id = uuid.uuid4().hex
        return task

    monkeypatch.setattr(TaskStore, "begin_attempt", fresh_id_per_attempt)
    with pytest.raises(AssertionError, match="ran 2x, 2 notes"):
        assert_one_run_one_note(pair, aws, keys["alice"], crashes)


# -- poison messages and crashing workers end, never loop ------------------------------------------
def dead_letters(aws: AwsStack, queues: Queues) -> list[str]:
    received = aws.client("sqs").receive_message(QueueUrl=queues.dlq_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
    return [m["Body"] for m in received.get("Messages", [])]


def assert_poison_is_dead_lettered(aws: AwsStack, queues: Queues) -> None:
    aws.client("sqs").send_message(QueueUrl=queues.url, MessageBody="{not json")
    found: list[str] = []

    def dead_lettered() -> bool:
        found.extend(dead_letters(aws, queues))
        return bool(found)

    wait_for(dead_lettered, 20, "the poison message in the DLQ")
    assert found == ["{not json"]


def test_a_poison_task_message_ends_in_the_worker_dlq(aws: AwsStack, queues: Queues, worker: None) -> None:
    """Given a message the worker cannot read, when it fails every receive, then after the
    queue's maxReceiveCount it is in the DLQ (where the stack's alarm sees it)."""
    assert_poison_is_dead_lettered(aws, queues)


def test_control_a_handler_that_swallows_the_poison_loses_it(
    aws: AwsStack, queues: Queues, monkeypatch: pytest.MonkeyPatch, worker: None
) -> None:
    real_process = TaskWorker.process

    async def swallowing(self: TaskWorker, message: Any) -> None:
        with contextlib.suppress(Exception):  # "handled": the message is deleted
            await real_process(self, message)

    monkeypatch.setattr(TaskWorker, "process", swallowing)
    with pytest.raises(AssertionError, match="the poison message in the DLQ"):
        assert_poison_is_dead_lettered(aws, queues)


def test_a_task_whose_worker_keeps_crashing_is_failed_after_its_attempts(
    pair: tuple[Instance, Instance], keys: dict[str, str], monkeypatch: pytest.MonkeyPatch, worker: None
) -> None:
    """Given a worker that dies on every run, then the task is recorded failed (with a message)
    after MCP_TASK_MAX_ATTEMPTS attempts, before the queue would dead-letter its message."""

    async def dies(self: TaskWorker, task: Any, call: Any) -> None:
        raise ConnectionError("the worker's environment went away")

    monkeypatch.setattr(TaskWorker, "_execute", dies)
    a, b = pair
    task_id = start(a.url, keys["alice"], "slow_compute", {"seconds": 0, "label": "doomed"})
    done = terminal(b.url, keys["alice"], task_id, seconds=20)
    assert done["status"] == "failed" and "failed 3 times" in done["statusMessage"], done
    assert isinstance(done["error"]["code"], int) and "result" not in done


# -- who may see a task, and for how long ------------------------------------------------------------
def test_another_principal_and_a_client_without_the_extension_cannot_reach_a_task(
    pair: tuple[Instance, Instance], keys: dict[str, str], worker: None
) -> None:
    a, b = pair
    task_id = start(a.url, keys["alice"], "slow_compute", {"seconds": 5, "label": "mine"})
    for method in ("tasks/get", "tasks/cancel"):
        foreign = rpc(b.url, keys["bob"], method, {"taskId": task_id})
        assert foreign["error"]["code"] == -32602, foreign  # as if it did not exist
        undeclared = rpc(b.url, keys["alice"], method, {"taskId": task_id}, caps={})
        assert undeclared["error"]["code"] == -32021, undeclared
        assert undeclared["error"]["data"] == {"requiredCapabilities": TASKS}
    assert status(a.url, keys["alice"], task_id)["status"] in ("working", "completed")


def test_an_expired_task_is_not_found_on_either_instance(
    pair: tuple[Instance, Instance], aws: AwsStack, keys: dict[str, str], worker: None
) -> None:
    """D6: past its ttl a task reads as absent, whether or not TTL has deleted it yet."""
    a, b = pair
    task_id = start(a.url, keys["alice"], "slow_compute", {"seconds": 0, "label": "short-lived"})
    assert terminal(b.url, keys["alice"], task_id)["status"] == "completed"
    aws.client("dynamodb").update_item(
        TableName=aws.table,
        Key={ts.PK: {"S": ts.task_pk(task_id)}, ts.SK: {"S": ts.TASK_SK}},
        UpdateExpression="SET #ttl = :past",
        ExpressionAttributeNames={"#ttl": ts.TTL},
        ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 1)}},
    )
    for instance in pair:
        gone = rpc(instance.url, keys["alice"], "tasks/get", {"taskId": task_id})
        assert gone["error"]["code"] == -32602, gone


def test_the_2025_wire_knows_no_tasks_even_when_initialize_declares_the_extension(
    pair: tuple[Instance, Instance], keys: dict[str, str], worker: None
) -> None:
    """SEP-2663 is undefined before 2026-07-28: nothing advertised, an optional task tool runs as
    a plain call, a required one is refused (-32021), and tasks/get is an unknown method."""
    a, b = pair
    session = open_legacy(a.url, keys["alice"], {"elicitation": {}, **TASKS})
    init = httpx.post(a.url, headers=headers(keys["alice"]), json=initialize_body(TASKS), timeout=30).json()
    assert EXTENSION_ID not in init["result"]["capabilities"].get("extensions", {})
    plain = final_message(
        httpx.post(b.url, headers=session, json=tool_request(2, "slow_compute", {"seconds": 0}), timeout=30)
    )
    assert plain["result"]["content"] and "taskId" not in plain["result"], plain
    required = final_message(httpx.post(b.url, headers=session, json=tool_request(3, "failing_job", {}), timeout=30))
    assert required["error"]["code"] == -32021, required
    body = {"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": "x"}}
    assert final_message(httpx.post(a.url, headers=session, json=body, timeout=30))["error"]["code"] == -32601


def initialize_body(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "t", "version": "1"},
        },
    }


def test_a_platform_tool_runs_as_a_task_for_a_declaring_client_and_plainly_otherwise(
    pair: tuple[Instance, Instance], keys: dict[str, str], worker: None
) -> None:
    """session_report (tests/support/platform_tools) is task-optional: the worker runs it for a
    client that declared the extension, the endpoint runs it for one that did not; same report."""
    a, b = pair
    handle = open_handle(a.url, keys["alice"])
    for i in range(3):
        appended = rpc(
            b.url,
            keys["alice"],
            "tools/call",
            {"name": "append_note", "arguments": {"session": handle, "text": f"n{i}"}},
        )
        assert not appended["result"]["isError"], appended
    task_id = start(a.url, keys["alice"], "session_report", {"session": handle})
    report = terminal(b.url, keys["alice"], task_id)
    assert report["status"] == "completed", report
    assert report["statusMessage"] == "read 3 calls (1 pages)"  # its progress, recorded on the task
    plain = rpc(
        a.url, keys["alice"], "tools/call", {"name": "session_report", "arguments": {"session": handle}}, caps={}
    )
    assert "taskId" not in plain["result"]
    for answer in (report["result"], plain["result"]):
        assert answer["structuredContent"]["by_tool"]["append_note"] == {"calls": 3, "errors": 0}, answer
