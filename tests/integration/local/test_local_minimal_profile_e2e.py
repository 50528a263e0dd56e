"""The minimal profile end to end on `make dev` (SPEC Cost: "idle cost per configuration published,
with a minimal profile"; K5 / K6 / K7 as that profile sets them, A1 / A3, K10's count-once).

`LOCAL_PROFILE=minimal` synthesizes the stack with the context key `profile=minimal`, so the
emulator gets what that template deploys: one PROVISIONED shard with 24 h retention and no enhanced
fan-out consumer, the ingest mapping's EventSourceArn being the stream itself (`ingest_fan_out=false`,
shared throughput). A tool call through the local endpoint must still be counted by ingest, once,
and a session tool's commit must still reach the audit trail. tests/infra/test_minimal_profile.py
checks the template alone; this runs it.
"""

from __future__ import annotations

import json
import re
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
from mcp_platform.adapters.dynamodb import table_schema as ts
from tests.support.local_platform import LocalPlatform, local_platform, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_minimal_profile")]
STAGE = "dev"  # cdk.json's default stage, which `python -m local` synthesizes
PIPELINE_DEADLINE_S = 30
PRINCIPAL = "local-developer"  # every dev key's principal (local/platform.py)


@pytest.fixture(scope="module")
def minimal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPlatform]:
    """`python -m local` with LOCAL_PROFILE=minimal, serving the platform's own tools."""
    with local_platform(tmp_path_factory.mktemp("minimal"), env={"LOCAL_PROFILE": "minimal"}) as running:
        print(f"python -m local (profile minimal) ready in {running.startup_s:.1f} s")
        yield running


def session_items(platform: LocalPlatform) -> list[dict[str, Any]]:
    dynamodb = platform.aws("dynamodb")
    table = local_name(STAGE, "DataSessionTable")
    return dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]


def counted_calls(platform: LocalPlatform, tool: str) -> int:
    """The `calls` counter ingest keeps for the dev principal and ``tool``, over every day."""
    return sum(
        int(item[ts.USAGE_CALLS]["N"])
        for item in session_items(platform)
        if item["pk"]["S"] == ts.usage_pk(PRINCIPAL) and item["sk"]["S"].endswith(f"#{tool}")
    )


def test_a_session_tool_call_is_counted_by_ingest_reading_the_shard_directly_and_audited(
    minimal: LocalPlatform,
) -> None:
    """Given the local platform started from the minimal profile's template: one PROVISIONED shard
    kept 24 h, no consumer registered on it, and the ingest mapping's source the stream itself;
    when a client opens a session and calls append_note in it through the local endpoint;
    then the session tool's commit reaches its audit trail (session_audit, A3), and ingest,
    fed by the mapping polling the shard, counts the call once in the usage counters."""
    # Given: what the template deploys (Cost: minimal profile; K6: one shard; K7: 24 h)
    kinesis = minimal.aws("kinesis")
    stream_name = local_name(STAGE, "EventsStream")
    summary = kinesis.describe_stream_summary(StreamName=stream_name)["StreamDescriptionSummary"]
    assert summary["StreamModeDetails"] == {"StreamMode": "PROVISIONED"}
    assert (summary["OpenShardCount"], summary["RetentionPeriodHours"]) == (1, 24)
    # And no enhanced fan-out consumer (K5 off: ingest_fan_out=false), the mapping reading the stream
    assert kinesis.list_stream_consumers(StreamARN=summary["StreamARN"])["Consumers"] == []
    ingest_source = re.compile(rf"{local_name(STAGE, 'ProcessingIngest')}  <- (\S+)  handler")
    banner = wait_for(lambda: ingest_source.search(minimal.log_path.read_text()), 10, "the start-up banner")
    assert re.fullmatch(r"EventsStream[0-9A-F]{8}", banner.group(1)), banner.group(0)
    note = f"minimal-{uuid.uuid4().hex[:8]}"

    # When: a session tool call through the local endpoint, then its trail read back over MCP
    async def drive() -> list[dict[str, Any]]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {minimal.api_key}"}, timeout=30)
        async with Client(streamable_http_client(minimal.mcp_url, http_client=http), mode="2026-07-28") as session:
            handle = (await session.call_tool("open_session", {})).structured_content["session"]
            appended = await session.call_tool("append_note", {"text": note, "session": handle})
            assert not appended.is_error, appended
            deadline = time.monotonic() + PIPELINE_DEADLINE_S
            while True:
                trail = (await session.call_tool("session_audit", {"session": handle})).structured_content
                records: list[dict[str, Any]] = trail["records"]
                if any(note in json.dumps(record) for record in records) or time.monotonic() > deadline:
                    return records
                await anyio.sleep(0.25)

    records = anyio.run(drive)

    # Then the commit is in the session's audit trail (A1: the table-stream mapping; A3)
    assert any(note in json.dumps(record) for record in records), records
    # And ingest counted the call, read from the one shard without a consumer (K10: once)
    wait_for(lambda: counted_calls(minimal, "append_note") >= 1, PIPELINE_DEADLINE_S, "ingest's usage counter")
    shard_id = kinesis.list_shards(StreamName=stream_name)["Shards"][0]["ShardId"]
    checkpoint = ts.ingest_checkpoint_pk(f"{stream_name}/{shard_id}")
    assert any(item["pk"]["S"] == checkpoint for item in session_items(minimal)), "no ingest checkpoint of the shard"
    assert counted_calls(minimal, "append_note") == 1
