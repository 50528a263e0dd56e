"""`python -m local` end to end: a subprocess on free ports, driven by the official SDK client.

One platform per module (start-up synthesizes the template); every wait is bounded by a
deadline and the subprocess is always stopped, with SIGINT as a user's Ctrl-C would, and must
then exit 0.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from local.platform import DEV_PRINCIPAL
from local.resources import local_name
from tests.support.aws import client, free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_platform")]
ROOT = Path(__file__).resolve().parents[3]
STAGE = "dev"  # cdk.json's default stage, which `python -m local` synthesizes
START_DEADLINE_S = 120
PIPELINE_DEADLINE_S = 30
T = TypeVar("T")


@dataclass
class LocalPlatform:
    mcp_url: str
    aws_url: str
    api_key: str
    startup_s: float

    def aws(self, service: str) -> Any:
        return client(service, self.aws_url)


def wait_for(probe: Callable[[], T | None], deadline_s: float, what: str) -> T:
    deadline = time.monotonic() + deadline_s
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {deadline_s} s waiting for {what}")
        time.sleep(0.25)


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPlatform]:
    mcp_port, aws_port = free_port(), free_port()
    api_key = f"mcpk_e2e_{uuid.uuid4().hex}"
    env = {**os.environ, "MCP_PORT": str(mcp_port), "LOCAL_AWS_PORT": str(aws_port), "MCP_API_KEY": api_key}
    env.pop("MCP_AUTH", None)
    log_path = tmp_path_factory.mktemp("local") / "platform.log"
    env["LOCAL_LOG_DIR"] = str(log_path.parent)  # the endpoint log files beside the platform's log
    started = time.monotonic()
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "local"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:

        def healthy() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"python -m local exited {process.returncode}:\n{log_path.read_text()[-4000:]}")
            try:
                return httpx.get(f"http://127.0.0.1:{mcp_port}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(healthy, START_DEADLINE_S, "the endpoint's /healthz")
        startup = time.monotonic() - started
        print(f"python -m local ready in {startup:.1f} s")
        yield LocalPlatform(f"http://127.0.0.1:{mcp_port}/mcp", f"http://127.0.0.1:{aws_port}", api_key, startup)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
            raise AssertionError(f"python -m local ignored SIGINT:\n{log_path.read_text()[-4000:]}") from None
    output = log_path.read_text()
    assert code == 0, f"exit code {code} after SIGINT:\n{output[-4000:]}"
    assert "stopped" in output


def scan(platform: LocalPlatform, table_logical_id: str) -> list[dict[str, Any]]:
    dynamodb = platform.aws("dynamodb")
    return dynamodb.scan(TableName=local_name(STAGE, table_logical_id), ConsistentRead=True)["Items"]


def test_tool_call_flows_through_endpoint_stream_ingest_and_audit(platform: LocalPlatform) -> None:
    """Given the local platform, when the official SDK client initializes, lists tools and calls
    append_note, then within a deadline the tool-call record (session table, sk tool#...), the
    ingested event (event# dedupe marker and usage# counter written by ingest through the EFO
    consumer mapping, K5) and the audit record (audit table, via the table-stream mapping, A1)
    all exist: the whole pipeline."""
    note = f"e2e-{uuid.uuid4().hex[:8]}"

    async def drive() -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {platform.api_key}"}, timeout=30)
        async with Client(streamable_http_client(platform.mcp_url, http_client=http), mode="legacy") as session:
            tools = [tool.name for tool in (await session.list_tools()).tools]
            assert "append_note" in tools
            result = await session.call_tool("append_note", {"text": note})
            assert not result.is_error, result

    anyio.run(drive)

    def tool_record() -> dict[str, Any] | None:
        return next(
            (
                i
                for i in scan(platform, "DataSessionTable")
                if i["sk"]["S"].startswith("tool#") and note in json.dumps(i)
            ),
            None,
        )

    record = wait_for(tool_record, PIPELINE_DEADLINE_S, "the tool-call record")
    session_pk = record["pk"]["S"]

    def ingested() -> bool:
        keys = [i["pk"]["S"] for i in scan(platform, "DataSessionTable")]
        return any(k.startswith("event#") for k in keys) and any(k.startswith("usage#") for k in keys)

    wait_for(ingested, PIPELINE_DEADLINE_S, "the ingest function's event# and usage# items")
    audited = wait_for(
        lambda: [i for i in scan(platform, "DataAuditTable") if i["pk"]["S"] == session_pk],
        PIPELINE_DEADLINE_S,
        "the audit records of the session",
    )
    assert audited


def test_poison_stream_record_ends_in_the_ingest_dlq(platform: LocalPlatform) -> None:
    """A5: Given a raw non-JSON record on the Kinesis stream, when the ingest mapping processes it,
    then it is retried, bisected down to itself and sent to the ingest DLQ as a Lambda-shaped
    on-failure record pointing at its shard and sequence number."""
    put = platform.aws("kinesis").put_record(
        StreamName=local_name(STAGE, "EventsStream"), Data=b"\x00 not json", PartitionKey=uuid.uuid4().hex
    )
    sqs = platform.aws("sqs")
    queue_url = sqs.get_queue_url(QueueName=local_name(STAGE, "IngestDlq"))["QueueUrl"]

    def dead_lettered() -> dict[str, Any] | None:
        for message in sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
            body = json.loads(message["Body"])
            if body["KinesisBatchInfo"]["startSequenceNumber"] == put["SequenceNumber"]:
                return dict(body)
        return None

    body = wait_for(dead_lettered, PIPELINE_DEADLINE_S, "the poison record in the ingest DLQ")
    assert body["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert body["requestContext"]["functionArn"].endswith(":function:" + local_name(STAGE, "ProcessingIngest"))
    assert body["KinesisBatchInfo"]["shardId"] == put["ShardId"]
    assert body["KinesisBatchInfo"]["streamArn"].endswith(":stream/" + local_name(STAGE, "EventsStream"))


def test_session_audit_and_recent_tool_events_tools_read_the_pipeline(platform: LocalPlatform) -> None:
    """Given a session with a committed note, when the caller asks through MCP tools, then
    session_audit (A3) returns its own trail from the audit table and recent_tool_events (K4)
    returns its events read back from the Kinesis stream, within a deadline."""
    note = f"tools-{uuid.uuid4().hex[:8]}"

    async def drive() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {platform.api_key}"}, timeout=30)
        async with Client(streamable_http_client(platform.mcp_url, http_client=http), mode="2026-07-28") as session:
            handle = (await session.call_tool("open_session", {})).structured_content["session"]
            await session.call_tool("append_note", {"text": note, "session": handle})
            deadline = time.monotonic() + PIPELINE_DEADLINE_S
            while True:
                trail = (await session.call_tool("session_audit", {"session": handle})).structured_content
                events = (await session.call_tool("recent_tool_events", {"session": handle})).structured_content
                noted = any(note in json.dumps(record) for record in trail["records"])
                published = any(event["tool"] == "append_note" for event in events["events"])
                if (noted and published) or time.monotonic() > deadline:
                    return trail["records"], events["events"]
                await anyio.sleep(0.5)

    records, events = anyio.run(drive)
    assert records, "session_audit returned no trail"
    assert any(note in json.dumps(record) for record in records)
    assert any(event["tool"] == "append_note" for event in events)


def test_the_apps_own_table_is_provisioned_granted_and_reached_through_typed_deps(platform: LocalPlatform) -> None:
    """#28 worked example: Given the app's CDK hook (functions/endpoint/app_resources.py) and its
    build_deps, when a caller saves a bookmark through the endpoint, then the item is in the app's
    own table (created from the synthesized template, named in the function's environment) under
    the caller's principal, and list_bookmarks reads it back."""
    url = f"https://example.org/{uuid.uuid4().hex[:8]}"

    async def drive() -> tuple[dict[str, Any], dict[str, Any]]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {platform.api_key}"}, timeout=30)
        async with Client(streamable_http_client(platform.mcp_url, http_client=http), mode="2026-07-28") as session:
            saved = await session.call_tool("save_bookmark", {"url": url, "title": "worked example"})
            listed = await session.call_tool("list_bookmarks", {"limit": 100})
            assert not saved.is_error and not listed.is_error, (saved, listed)
            return saved.structured_content, listed.structured_content

    saved, listed = anyio.run(drive)
    assert saved["url"] == url and saved["title"] == "worked example"
    assert url in [bookmark["url"] for bookmark in listed["bookmarks"]]
    items = scan(platform, "AppBookmarks")
    assert [item["owner"]["S"] for item in items if item["url"]["S"] == url] == [DEV_PRINCIPAL]
