"""Every function started as Lambda starts it: what `cdk deploy` ships is what runs here.

The stacks are synthesized for this machine's architecture with the layer bundled as for a
deploy (build/layer-<arch>, from the lock file, for the runtime's Python); each function runs
from its staged code asset with the layer asset's ``python/`` on the path and the environment
the template gives it, its resources on the emulator (``AWS_ENDPOINT_URL`` is the one variable
added, and the Web Adapter's port). The endpoint runs ``run.sh``; ingest, audit and the task
worker run under the real runtime interface client with events shaped as Lambda delivers them.
DAX is off here (no DAX emulator exists, X5): the same code talks to the table directly. The
staged endpoint asset (the endpoint's and the task worker's) serves the platform's own tools
(tests/support/platform_tools) in place of the starter app's ``mcp_tools``: what is shown is the
platform, whatever the app holds.
"""

from __future__ import annotations

import base64
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from local.queue_poller import sqs_event_record
from local.ttl import TTL_IDENTITY
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.config import EnvVars
from mcp_platform.ops.lambda_records import dynamodb_event_record, kinesis_event_record
from tests.support.aws import free_port
from tests.support.deployment import REGION, Deployment, deployed
from tests.support.interactive import modern_meta
from tests.support.lambda_runtime import (
    DeployedFunction,
    LambdaStartFailed,
    WebFunction,
    started_event_function,
    started_web_function,
)
from tests.support.mcp_http import call, final_message, initialize, modern_call, sse_messages
from tests.support.session_stream import audit_records

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("lambda_shaped")]
TASKS_EXTENSION: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    # Given the stacks synthesized as for a deploy to this architecture, the layer bundled, and
    # the template's tables, stream, consumer, queues and secret on the emulator
    with deployed(tmp_path_factory) as deployment:
        yield deployment


@pytest.fixture(scope="module")
def endpoint(deployment: Deployment) -> Iterator[tuple[WebFunction, str]]:
    function = deployment.function("run.sh")
    key = ApiKeyStore(function.environment[EnvVars.SESSION_TABLE], deployment.clients.dynamodb).mint("lambda-shaped")
    with started_web_function(
        function, port=free_port(), ready_path=function.environment["AWS_LWA_READINESS_CHECK_PATH"]
    ) as web:
        yield web, key


def test_endpoint_starts_through_run_sh_and_serves_both_eras(endpoint: tuple[WebFunction, str]) -> None:
    web, key = endpoint
    url = web.base_url + "/mcp"
    # When a 2026 client discovers the server
    discovered = final_message(modern_call(url, key, 1, "server/discover", {"_meta": modern_meta({})}))
    assert discovered["result"]["serverInfo"]["name"], discovered
    # And a 2025 client opens a session, calls a session tool in it, and a streamed tool
    session_id = initialize(url, key)
    appended = final_message(
        call(url, key, session_id, 2, "tools/call", {"name": "append_note", "arguments": {"text": "shaped"}})
    )
    assert appended["result"]["structuredContent"] == {"appended": 1}, appended
    streamed = call(
        url,
        key,
        session_id,
        3,
        "tools/call",
        {"name": "countdown", "arguments": {"steps": 2, "interval_ms": 10}, "_meta": {"progressToken": "p"}},
    )
    # Then the streamed call is an SSE stream with its progress before the result
    assert streamed.headers["content-type"].startswith("text/event-stream")
    messages = sse_messages(streamed)
    assert [m["method"] for m in messages if "method" in m].count("notifications/progress") >= 2
    assert "result" in messages[-1] and not messages[-1]["result"].get("isError"), messages[-1]


def test_ingest_under_the_runtime_client_reports_only_the_poison_record(
    deployment: Deployment, endpoint: tuple[WebFunction, str]
) -> None:
    # Given the tool-call events the endpoint published for a session's calls, read from the stream
    session_with_a_note(deployment, endpoint)
    stream = next(iter(deployment.plan.streams))
    records = wait_for_records(deployment, stream.name, lambda found: len(found) >= 2)
    consumer_arn = deployment.attributes[next(iter(deployment.plan.consumers)).logical_id]["ConsumerARN"]
    batch = [
        kinesis_event_record(r, shard_id="shardId-000000000000", source_arn=consumer_arn, region=REGION)
        for r in records
    ]
    # And a poison record among them (not a tool-call event)
    poison = dict(
        batch[0],
        kinesis={**batch[0]["kinesis"], "sequenceNumber": "9" * 56, "data": base64.b64encode(b"{not json").decode()},
    )
    # When ingest, started as Lambda starts it, gets the enhanced fan-out batch
    with started_event_function(deployment.function("ingest_handler.lambda_handler")) as ingest:
        response = ingest.invoke({"Records": [*batch, poison]})
    # Then only the poison record is a batch item failure
    assert response == {"batchItemFailures": [{"itemIdentifier": "9" * 56}]}
    # And each call's idempotent record is in the session table
    table = deployment.function("ingest_handler.lambda_handler").environment[EnvVars.SESSION_TABLE]
    items = deployment.clients.dynamodb.scan(TableName=table)["Items"]
    assert any(item[ts.SK]["S"].startswith("tool#") and "append_note" in json.dumps(item) for item in items)


def test_audit_under_the_runtime_client_audits_a_batch_with_a_ttl_remove(
    deployment: Deployment, endpoint: tuple[WebFunction, str]
) -> None:
    # Given a session the endpoint wrote, then removed by TTL (DynamoDB's service principal)
    table = deployment.function("ingest_handler.lambda_handler").environment[EnvVars.SESSION_TABLE]
    pk = session_with_a_note(deployment, endpoint)
    deployment.clients.dynamodb.delete_item(TableName=table, Key={ts.PK: {"S": pk}, ts.SK: {"S": ts.METADATA_SK}})
    stream_arn = deployment.attributes[next(t for t in deployment.plan.tables if t.name == table).logical_id][
        "StreamArn"
    ]
    changes = table_stream_records(deployment, stream_arn)
    batch = [dynamodb_event_record(r, stream_arn=stream_arn) for r in changes]
    batch[-1] = {**batch[-1], "userIdentity": dict(TTL_IDENTITY)}
    assert batch[-1]["eventName"] == "REMOVE"
    audit = deployment.function("audit_handler.lambda_handler")
    # When audit, started as Lambda starts it, gets the table-stream batch
    with started_event_function(audit) as running:
        response = running.invoke({"Records": batch})
    # Then nothing failed; every session change is audited under its sequence number (A2, A3; API keys
    # and other non-session items are skipped), the expiry wrote the session's summary (A4)
    assert response == {"batchItemFailures": []}
    audited = deployment.clients.dynamodb.scan(TableName=audit.environment[EnvVars.AUDIT_TABLE])["Items"]
    sequences = {record["sequence_number"] for record in audit_records(audited)}
    session_changes = [r for r in batch if r["dynamodb"]["Keys"][ts.PK]["S"].startswith(ts.SESSION_PREFIX)]
    assert sequences == {r["dynamodb"]["SequenceNumber"] for r in session_changes}
    assert any(item[ts.AUDIT_SK]["S"] == ts.AUDIT_SUMMARY_SK for item in audited)
    # And it emitted the session.expired event to the stream
    stream = next(iter(deployment.plan.streams))
    wait_for_records(deployment, stream.name, lambda found: any(b"session.expired" in bytes(r["Data"]) for r in found))


def test_task_worker_under_the_runtime_client_completes_a_queued_task(
    deployment: Deployment, endpoint: tuple[WebFunction, str]
) -> None:
    web, key = endpoint
    url = web.base_url + "/mcp"
    # Given a 2026 client with the tasks extension that starts session_report as a task
    opened = final_message(
        modern_call(url, key, 1, "tools/call", {"name": "open_session", "arguments": {}, "_meta": modern_meta({})})
    )
    handle = opened["result"]["structuredContent"]["session"]
    created = final_message(
        modern_call(
            url,
            key,
            2,
            "tools/call",
            {"name": "session_report", "arguments": {"session": handle}, "_meta": modern_meta(TASKS_EXTENSION)},
        )
    )
    assert created["result"]["resultType"] == "task", created
    task_id = created["result"]["taskId"]
    # And the message the endpoint queued, delivered as Lambda's SQS mapping delivers it
    worker = deployment.function("task_worker.lambda_handler")
    queue_url = worker.environment[EnvVars.TASK_QUEUE_URL]
    messages = deployment.clients.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=5)[
        "Messages"
    ]
    queue_arn = deployment.clients.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    # When the worker, started as Lambda starts it, handles the batch
    with started_event_function(worker) as running:
        response = running.invoke({"Records": [sqs_event_record(m, queue_arn, REGION) for m in messages]})
    # Then no message failed and the task is completed, as any endpoint instance reads it
    assert response == {"batchItemFailures": []}
    status = final_message(
        modern_call(url, key, 3, "tasks/get", {"taskId": task_id, "_meta": modern_meta(TASKS_EXTENSION)})
    )
    assert status["result"]["status"] == "completed", status


def test_a_handler_the_asset_lacks_fails_the_start(deployment: Deployment) -> None:
    # Given the ingest function pointed at a handler its asset does not have
    function = deployment.function("ingest_handler.lambda_handler")
    missing = DeployedFunction(**{**function.__dict__, "handler": "ingest_handler.no_such_handler"})
    # Then the runtime client reports an init error, as Lambda would (Runtime.HandlerNotFound)
    with started_event_function(missing) as running, pytest.raises(LambdaStartFailed, match="HandlerNotFound"):
        running.invoke({"Records": []})


def test_a_layer_without_a_dependency_fails_the_start(deployment: Deployment, tmp_path: Path) -> None:
    # Given the audit function on a copy of the layer that lacks orjson (every record's JSON)
    function = deployment.function("audit_handler.lambda_handler")
    stripped = tmp_path / "python"
    shutil.copytree(function.layer_python, stripped, ignore=shutil.ignore_patterns("orjson*"))
    broken = DeployedFunction(**{**function.__dict__, "layer_python": stripped})
    # Then importing the handler fails the start: the test venv's copy is not on the path
    with started_event_function(broken) as running, pytest.raises(LambdaStartFailed, match="orjson"):
        running.invoke({"Records": []})


def session_with_a_note(deployment: Deployment, endpoint: tuple[WebFunction, str]) -> str:
    """A 2026 application session opened through the endpoint, with a note appended; its pk."""
    web, key = endpoint
    url, table = web.base_url + "/mcp", web.function.environment[EnvVars.SESSION_TABLE]
    before = session_pks(deployment, table)
    opened = final_message(
        modern_call(url, key, 1, "tools/call", {"name": "open_session", "arguments": {}, "_meta": modern_meta({})})
    )
    handle = opened["result"]["structuredContent"]["session"]
    params = {"name": "append_note", "arguments": {"session": handle, "text": "shaped"}, "_meta": modern_meta({})}
    appended = final_message(modern_call(url, key, 2, "tools/call", params))
    assert appended["result"]["structuredContent"] == {"appended": 1}, appended
    (pk,) = session_pks(deployment, table) - before
    return pk


def session_pks(deployment: Deployment, table: str) -> set[str]:
    items = deployment.clients.dynamodb.scan(TableName=table)["Items"]
    return {
        item[ts.PK]["S"]
        for item in items
        if item[ts.PK]["S"].startswith(ts.SESSION_PREFIX) and item[ts.SK]["S"] == ts.METADATA_SK
    }


def wait_for_records(
    deployment: Deployment, stream_name: str, enough: Any, timeout_s: float = 20
) -> list[dict[str, Any]]:
    kinesis = deployment.clients.kinesis
    deadline = time.monotonic() + timeout_s
    while True:
        found: list[dict[str, Any]] = []
        for shard in kinesis.list_shards(StreamName=stream_name)["Shards"]:
            iterator = kinesis.get_shard_iterator(
                StreamName=stream_name, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
            found += kinesis.get_records(ShardIterator=iterator, Limit=1000)["Records"]
        if enough(found):
            return found
        assert time.monotonic() < deadline, f"the stream never had what was expected: {len(found)} records"
        time.sleep(0.2)


def table_stream_records(deployment: Deployment, stream_arn: str) -> list[dict[str, Any]]:
    streams = deployment.clients.streams
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records += streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
    return records


def audit_count(deployment: Deployment, audit: DeployedFunction) -> int:
    return int(
        deployment.clients.dynamodb.scan(TableName=audit.environment[EnvVars.AUDIT_TABLE], Select="COUNT")["Count"]
    )
