"""`python -m local` end to end: a subprocess on free ports, driven by the official SDK client.

One platform per module (start-up synthesizes the template), serving the platform's own tools;
every wait is bounded by a deadline and the subprocess is always stopped, with SIGINT as a
user's Ctrl-C would, and must then exit 0 (tests/support/local_platform.py).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from local.resources import local_name
from tests.support.local_platform import LocalPlatform, local_platform, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_platform")]
STAGE = "dev"  # cdk.json's default stage, which `python -m local` synthesizes
PIPELINE_DEADLINE_S = 30


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPlatform]:
    """Serving the platform's own tools (tests/support/platform_tools); stopped with SIGINT, it
    must exit 0 (tests/support/local_platform.py)."""
    with local_platform(tmp_path_factory.mktemp("local")) as running:
        print(f"python -m local ready in {running.startup_s:.1f} s")
        yield running


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
