"""K10 with real processes: the functions that consume events, killed (SIGKILL) mid-work, lose and
double nothing.

Each function runs as Lambda starts it (tests/support/lambda_runtime.py: its staged asset, the
built layer, the runtime interface client, the template's environment), and every AWS call it
makes goes through a proxy (tests/support/holding_proxy.py) that holds the call following the
point under test. The test kills the process while that call is held, drops the call, and lets
the source deliver again to a fresh process: the stream mappings as the local platform applies
Lambda's rules (local/mapping.py: a function error bisects and retries the batch), the task queue
as SQS does (local/queue_poller.py: a message not deleted comes back once its visibility timeout
ends). Nothing waits on a timer except the deadlines of what must arrive.

Every test's calls are made by a principal of its own, so its usage counters start at zero.
"""

from __future__ import annotations

import json
import shutil
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from local.mapping import EventSourceMapping
from local.platform import stream_mapping
from local.pollers import StreamPoller
from local.queue_poller import QueuePoller, sqs_event_record
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.config import EnvVars
from mcp_platform.protocol.tasks import EXTENSION_ID
from tests.support.aws import free_port
from tests.support.deployment import REGION, Deployment, deployed
from tests.support.features import PLATFORM_TOOLS_DIR
from tests.support.holding_proxy import PUT_RECORD, PUT_RECORDS, TRANSACT_WRITE_ITEMS, HoldingProxy, holding_proxy
from tests.support.interactive import modern_meta
from tests.support.kinesis import read_whole_stream
from tests.support.lambda_runtime import (
    ExecutionEnvironments,
    LambdaStartFailed,
    WebFunction,
    execution_environments,
    started_web_function,
)
from tests.support.local_platform import wait_for
from tests.support.mcp_http import final_message, modern_call
from tests.support.session_stream import audit_records
from tests.support.task_tools import long_tasks

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("killed_consumers")]
TASKS: dict[str, Any] = {"extensions": {EXTENSION_ID: {}}}
HOLD_DEADLINE_S = 30
DELIVERY_DEADLINE_S = 120
T = TypeVar("T")


# -- the deployment, its proxy, and the mappings that feed the functions ----------------------------
@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    # The platform's tools and the test task tools (noted_task commits to its session, patient_task
    # commits nothing): the endpoint creates the tasks, the task worker runs them.
    features = tmp_path_factory.mktemp("features") / "mcp_tools"
    shutil.copytree(PLATFORM_TOOLS_DIR, features, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(long_tasks.__file__, features / "long_tasks.py")
    with deployed(tmp_path_factory, features) as deployment:
        yield deployment


@pytest.fixture(scope="module")
def proxy(deployment: Deployment) -> Iterator[HoldingProxy]:
    with holding_proxy(deployment.clients.dynamodb.meta.endpoint_url) as started:
        yield started


@pytest.fixture(scope="module")
def endpoint(deployment: Deployment) -> Iterator[WebFunction]:
    """The endpoint, straight to the emulator: it is not the process under test here."""
    function = deployment.function("run.sh")
    with started_web_function(
        function, port=free_port(), ready_path=function.environment["AWS_LWA_READINESS_CHECK_PATH"]
    ) as web:
        yield web


@dataclass
class Consumer:
    """A stream function behind its mapping: the poller reads the source from where the last
    delivery ended and hands each shard's batch to the mapping, which invokes ``environments``."""

    environments: ExecutionEnvironments
    poller: StreamPoller
    dead_letters: list[dict[str, Any]] = field(default_factory=list)

    def drain(self) -> None:
        """Delivers until a read finds nothing new."""
        wait_for(lambda: self.poller.poll_once() == 0, DELIVERY_DEADLINE_S, f"{self.poller.name} to catch up")


def consumer(deployment: Deployment, proxy: HoldingProxy, handler: str) -> Iterator[Consumer]:
    function = deployment.function(handler, **{EnvVars.AWS_ENDPOINT_URL: proxy.url})
    (spec,) = [s for s in deployment.plan.mappings if s.function_logical_id == function.logical_id]
    source, config = stream_mapping(spec, deployment.plan, deployment.attributes, deployment.clients, REGION)
    with execution_environments(function) as environments:
        dead_letters: list[dict[str, Any]] = []
        mapping = EventSourceMapping(config, environments.invoke, dead_letters.append)
        yield Consumer(environments, StreamPoller(function.name, source, mapping, threading.Event()), dead_letters)


@pytest.fixture(scope="module")
def ingest(deployment: Deployment, proxy: HoldingProxy) -> Iterator[Consumer]:
    yield from consumer(deployment, proxy, "ingest_handler.lambda_handler")


@pytest.fixture(scope="module")
def audit(deployment: Deployment, proxy: HoldingProxy) -> Iterator[Consumer]:
    yield from consumer(deployment, proxy, "audit_handler.lambda_handler")


@pytest.fixture(scope="module")
def worker(deployment: Deployment, proxy: HoldingProxy) -> Iterator[ExecutionEnvironments]:
    function = deployment.function("task_worker.lambda_handler", **{EnvVars.AWS_ENDPOINT_URL: proxy.url})
    with execution_environments(function) as environments:
        yield environments


# -- a caller of its own per test ------------------------------------------------------------------
@dataclass
class Caller:
    deployment: Deployment
    url: str
    principal: str
    key: str

    def call(self, name: str, arguments: dict[str, Any], capabilities: dict[str, Any] | None = None) -> Any:
        params = {"name": name, "arguments": arguments, "_meta": modern_meta(capabilities or {})}
        answer = final_message(modern_call(self.url, self.key, 1, "tools/call", params))
        assert "result" in answer and not answer["result"].get("isError"), answer
        return answer["result"]

    def open_session(self) -> str:
        return str(self.call("open_session", {})["structuredContent"]["session"])

    def start_task(self, name: str, arguments: dict[str, Any]) -> str:
        created = self.call(name, arguments, TASKS)
        assert created["resultType"] == "task", created
        return str(created["taskId"])

    def task(self, task_id: str) -> dict[str, Any]:
        params = {"taskId": task_id, "_meta": modern_meta(TASKS)}
        answer = final_message(modern_call(self.url, self.key, 1, "tasks/get", params))
        assert "result" in answer, answer
        return dict(answer["result"])

    def usage_calls(self, tool: str) -> int:
        """The calls of ``tool`` ingest counted for this principal, every day's."""
        items = self.deployment.clients.dynamodb.query(
            TableName=session_table(self.deployment),
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": ts.PK},
            ExpressionAttributeValues={":pk": {"S": ts.usage_pk(self.principal)}},
            ConsistentRead=True,
        )["Items"]
        return sum(int(item[ts.USAGE_CALLS]["N"]) for item in items if item[ts.SK]["S"].endswith(f"#{tool}"))


@pytest.fixture
def caller(deployment: Deployment, endpoint: WebFunction) -> Caller:
    principal = f"crash-{uuid.uuid4().hex[:12]}"
    key = ApiKeyStore(session_table(deployment), deployment.clients.dynamodb).mint(principal)
    return Caller(deployment, endpoint.base_url + "/mcp", principal, key)


def session_table(deployment: Deployment) -> str:
    return deployment.function("ingest_handler.lambda_handler").environment[EnvVars.SESSION_TABLE]


def tool_call_ids(deployment: Deployment, session: str) -> list[str]:
    """The ids of the session's tool-call records, one per record (a consistent read)."""
    found = deployment.clients.dynamodb.query(
        TableName=session_table(deployment),
        KeyConditionExpression="#pk = :pk AND begins_with(#sk, :tool)",
        ExpressionAttributeNames={"#pk": ts.PK, "#sk": ts.SK},
        ExpressionAttributeValues={":pk": {"S": ts.session_pk(session)}, ":tool": {"S": "tool#"}},
        ConsistentRead=True,
    )
    return [item[ts.TOOL_CALL_ID]["S"] for item in found["Items"]]


def counted(deployment: Deployment, event_ids: list[str]) -> list[str]:
    """Which of the events ingest has counted (its dedupe marker exists)."""
    dynamodb = deployment.clients.dynamodb
    return [
        event_id
        for event_id in event_ids
        if "Item"
        in dynamodb.get_item(
            TableName=session_table(deployment),
            Key={ts.PK: {"S": ts.event_dedupe_pk(event_id)}, ts.SK: {"S": ts.EVENT_DEDUPE_SK}},
            ConsistentRead=True,
        )
    ]


def on_the_stream(deployment: Deployment, event_ids: list[str]) -> Counter[str]:
    """How many records of the event stream carry each of the events."""
    records = read_whole_stream(deployment.clients.kinesis, next(iter(deployment.plan.streams)).name)
    carried = (json.loads(record["Data"]).get("event_id") for record in records)
    return Counter(event_id for event_id in carried if event_id in event_ids)


@contextmanager
def holding(proxy: HoldingProxy, target: str, after: int = 0) -> Iterator[None]:
    """``target`` held (after ``after`` of them passed) until the block ends, whatever happens in it:
    a failed test leaves no process waiting on a held call."""
    proxy.hold(target, after=after)
    try:
        yield
    finally:
        proxy.drop_held()


def kill_while_held(environments: ExecutionEnvironments, proxy: HoldingProxy) -> None:
    """The process dies with the held call in flight; the call is dropped, never forwarded, before
    any fresh environment may start (it would be held too)."""
    environments.kill(then=proxy.drop_held)


# -- ingest ----------------------------------------------------------------------------------------
NOTES = 6


def test_k10_ingest_killed_mid_batch_counts_each_event_once_when_the_batch_comes_again(
    deployment: Deployment, proxy: HoldingProxy, caller: Caller, ingest: Consumer
) -> None:
    """K10: ingest killed mid-batch (its usage transaction in flight) gets the batch again
    (bisected, in a fresh environment); the batch's usage is applied through the shard's
    checkpoint in one transaction, all or nothing, so each call's usage counters and dedupe marker
    are applied exactly once (docs/operating/dead-letters.md; a death after the write:
    tests/integration/events/test_ingest_batch_exactly_once.py)."""
    # Given six notes appended in a session, their events on the stream, not yet delivered to ingest
    # (the session's opening is: the batch holds the six events alone, in one shard)
    session = caller.open_session()
    ingest.drain()
    for index in range(NOTES):
        caller.call("append_note", {"session": session, "text": f"note {index}"})
    calls = tool_call_ids(deployment, session)
    assert len(calls) == NOTES
    # When ingest gets the batch and dies while its usage transaction (the batch's one: the
    # commits wrote the records) is held
    environments = ingest.environments.started
    with ThreadPoolExecutor(1) as pool, holding(proxy, TRANSACT_WRITE_ITEMS):
        delivery = pool.submit(ingest.poller.poll_once)
        proxy.wait_held(1, HOLD_DEADLINE_S)
        counted_when_killed = counted(deployment, calls)
        kill_while_held(ingest.environments, proxy)
        # And the mapping delivers the batch again, to a fresh environment
        delivery.result(timeout=DELIVERY_DEADLINE_S)
    # Then the process died mid-batch: nothing of the batch was counted
    assert counted_when_killed == [], counted_when_killed
    assert ingest.environments.started > environments and not ingest.dead_letters
    # And every call is counted exactly once, and recorded once
    assert sorted(counted(deployment, calls)) == sorted(calls)
    assert caller.usage_calls("append_note") == NOTES
    assert sorted(tool_call_ids(deployment, session)) == sorted(calls)


# -- audit -----------------------------------------------------------------------------------------
RELAYED = 4


def audited_sequences(deployment: Deployment, session: str) -> list[str]:
    """The stream sequence numbers of the session's audit records, one per record."""
    table = deployment.function("audit_handler.lambda_handler").environment[EnvVars.AUDIT_TABLE]
    items = deployment.clients.dynamodb.query(
        TableName=table,
        KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={"#pk": ts.AUDIT_PK},
        ExpressionAttributeValues={":pk": {"S": ts.session_pk(session)}},
        ConsistentRead=True,
    )["Items"]
    return [record["sequence_number"] for record in audit_records(items)]


def session_changes(deployment: Deployment, session: str) -> list[str]:
    """The sequence numbers of the table stream's records of the session's items."""
    table = next(t for t in deployment.plan.tables if t.name == session_table(deployment))
    stream_arn = deployment.attributes[table.logical_id]["StreamArn"]
    streams, changes = deployment.clients.streams, []
    for shard in streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        for record in streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]:
            if record["dynamodb"]["Keys"][ts.PK]["S"] == ts.session_pk(session):
                changes.append(record["dynamodb"]["SequenceNumber"])
    return changes


def test_k10_audit_killed_mid_batch_audits_each_change_once_and_relays_events_counted_once(
    deployment: Deployment, proxy: HoldingProxy, caller: Caller, audit: Consumer, ingest: Consumer
) -> None:
    """K10, A2: audit killed mid-batch (a record audited, its committed event not yet relayed) gets
    the batch again; each change gets one audit row (keyed by its sequence number), every
    committed event reaches the stream, and ingest counts each once however often it was relayed."""
    # Given four notes appended in a session: their commits on the table's stream, their events
    # not yet counted by ingest (so the audit relays each)
    audit.drain()
    session = caller.open_session()
    for index in range(RELAYED):
        caller.call("append_note", {"session": session, "text": f"note {index}"})
    calls = tool_call_ids(deployment, session)
    # When audit gets the batch and dies after relaying two events, the third relay held (its record
    # audited already)
    environments = audit.environments.started
    with ThreadPoolExecutor(1) as pool, holding(proxy, PUT_RECORD, after=2):
        delivery = pool.submit(audit.poller.poll_once)
        proxy.wait_held(1, HOLD_DEADLINE_S)
        audited_when_killed = audited_sequences(deployment, session)
        kill_while_held(audit.environments, proxy)
        # And the mapping delivers the batch again, to a fresh environment
        delivery.result(timeout=DELIVERY_DEADLINE_S)
    changes = session_changes(deployment, session)
    # Then the process died mid-batch: some changes were audited, the rest not
    assert 0 < len(audited_when_killed) < len(changes), (audited_when_killed, changes)
    assert audit.environments.started > environments and not audit.dead_letters
    # And every change of the session is audited exactly once
    rows = Counter(audited_sequences(deployment, session))
    assert [sequence for sequence, count in rows.items() if count > 1] == [], "changes audited twice"
    assert sorted(rows) == sorted(changes)
    # And every committed event is on the stream, some more than once (the endpoint's own emission,
    # then a relay per delivery), and ingest counts each exactly once
    relayed = on_the_stream(deployment, calls)
    assert set(relayed) == set(calls) and max(relayed.values()) > 2, relayed
    ingest.drain()
    assert sorted(counted(deployment, calls)) == sorted(calls)
    assert caller.usage_calls("append_note") == RELAYED


# -- task worker -----------------------------------------------------------------------------------
def run_killed_at_the_flush(
    deployment: Deployment, proxy: HoldingProxy, worker: ExecutionEnvironments, probe: Callable[[], T]
) -> T:
    """The worker gets the task's message and is killed while its event flush is held (the tool
    ran, and committed if it commits); SQS delivers the message again once its visibility timeout
    ends (ended here at once) to a fresh environment. Returns what ``probe`` saw at the kill."""
    sqs = deployment.clients.sqs
    queue_url = worker.function.environment[EnvVars.TASK_QUEUE_URL]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    (message,) = wait_for(
        lambda: sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=1, WaitTimeSeconds=0).get("Messages"),
        HOLD_DEADLINE_S,
        "the task's message",
    )
    environments = worker.started
    with ThreadPoolExecutor(1) as pool, holding(proxy, PUT_RECORDS):
        run = pool.submit(worker.invoke, {"Records": [sqs_event_record(message, queue_arn, REGION)]})
        proxy.wait_held(1, HOLD_DEADLINE_S)
        seen = probe()
        kill_while_held(worker, proxy)
        with pytest.raises(LambdaStartFailed, match="exited"):
            run.result(timeout=HOLD_DEADLINE_S)
    sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    mapping = QueuePoller(
        "task-worker", sqs, queue_url, queue_arn, worker.invoke, batch_size=1, region=REGION, stop=threading.Event()
    )
    wait_for(lambda: mapping.poll_once() == 1, DELIVERY_DEADLINE_S, "the message delivered again")
    assert worker.started > environments
    return seen


def test_k10_task_worker_killed_after_the_commit_before_its_event_loses_nothing(
    deployment: Deployment,
    proxy: HoldingProxy,
    caller: Caller,
    worker: ExecutionEnvironments,
    audit: Consumer,
    ingest: Consumer,
) -> None:
    """K10: a session task's worker killed after the task's commit and before its event flush: the
    message comes again, the run replays the committed result (the tool does not run twice), the
    task completes with it, and the event, held by the commit alone, reaches the stream through
    the audit's relay and is counted once."""
    # Given a task that appends a note to a session (an append-only commit under the task's call id)
    session = caller.open_session()
    task_id = caller.start_task("noted_task", {"session": session, "tag": "once"})
    # When its worker is killed after the commit, with the run's event held, and the message comes again
    committed_when_killed = run_killed_at_the_flush(
        deployment, proxy, worker, lambda: tool_call_ids(deployment, session)
    )
    assert len(committed_when_killed) == 1, committed_when_killed
    # Then the task completed with the result of its one run, and its note is in the session once
    done = caller.task(task_id)
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"] == {"run": 1}, done
    assert tool_call_ids(deployment, session) == committed_when_killed
    (call,) = committed_when_killed
    notes = caller.call("read_notes", {"session": session, "limit": 50})["structuredContent"]["notes"]
    assert [note["text"] for note in notes] == ["once"]
    # And its event reaches the stream (the audit relays the commit's) and ingest counts it once
    audit.drain()
    ingest.drain()
    assert counted(deployment, [call]) == [call]
    assert caller.usage_calls("noted_task") == 1


def test_k10_task_worker_killed_before_its_event_runs_the_task_again_counted_once(
    deployment: Deployment, proxy: HoldingProxy, caller: Caller, worker: ExecutionEnvironments, ingest: Consumer
) -> None:
    """K10: a task that commits nothing, its worker killed before the run's event left: the task's
    outcome is written only after its event is flushed, so the message comes again, the task runs
    again under the same call id, and its event is counted once."""
    # Given a task without a session (nothing committed; its event is all that records the run)
    task_id = caller.start_task("patient_task", {"tag": "stateless", "seconds": 0})
    # When its worker is killed with the run's event held, and the message comes again
    run_killed_at_the_flush(deployment, proxy, worker, lambda: None)
    # Then the task completed with its result
    done = caller.task(task_id)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "waited", done
    # And its run is counted exactly once
    ingest.drain()
    assert caller.usage_calls("patient_task") == 1
