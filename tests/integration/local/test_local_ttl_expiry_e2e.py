"""A4 end to end on `python -m local`: a session expires by (emulated) TTL and no DLQ sees it.

The platform runs as a subprocess with its TTL sweeper every second. The official SDK client
opens a session and appends a note; the test then makes the session due by setting its
metadata item's ttl in the past, straight in the emulator (as time passing would), and waits
for the whole A4 path: the sweeper's REMOVE (with the dynamodb.amazonaws.com identity) reaches
the audit function, which writes the session summary, revokes the held items and publishes
``session.expired`` on the tool-event stream; the ingest function acknowledges that event.
Then the ingest, audit, producer and expiry-events DLQs are all empty.
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
from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.application.events.stream_events import SessionExpiredEvent, decode_stream_event
from mcp_platform.protocol.clock import utc_now_iso
from tests.support.kinesis import read_whole_stream
from tests.support.local_platform import LocalPlatform, local_platform, wait_for
from tests.support.session_stream import audit_records

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_platform")]
STAGE = "dev"  # cdk.json's default stage, which `python -m local` synthesizes
PIPELINE_DEADLINE_S = 45
DLQS = ("IngestDlq", "AuditDlq", "ProducerDlq", "ExpiryEventsDlq")


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPlatform]:
    with local_platform(tmp_path_factory.mktemp("local-ttl"), {"LOCAL_TTL_SWEEP_SECONDS": "1"}) as running:
        yield running


def open_session_with_note(platform: LocalPlatform, note: str) -> str:
    async def drive() -> str:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {platform.api_key}"}, timeout=30)
        async with Client(streamable_http_client(platform.mcp_url, http_client=http), mode="2026-07-28") as session:
            opened = await session.call_tool("open_session", {})
            assert not opened.is_error, opened
            handle = str(opened.structured_content["session"])
            appended = await session.call_tool("append_note", {"text": note, "session": handle})
            assert not appended.is_error, appended
            return handle

    return anyio.run(drive)


def session_items(platform: LocalPlatform, session_id: str) -> list[dict[str, Any]]:
    return platform.aws("dynamodb").query(
        TableName=local_name(STAGE, "DataSessionTable"),
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": ts.session_pk(session_id)}},
        ConsistentRead=True,
    )["Items"]


def audit_items(platform: LocalPlatform, session_id: str) -> list[dict[str, Any]]:
    return platform.aws("dynamodb").query(
        TableName=local_name(STAGE, "DataAuditTable"),
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": ts.session_pk(session_id)}},
        ConsistentRead=True,
    )["Items"]


def expiry_events(platform: LocalPlatform, session_id: str) -> list[SessionExpiredEvent]:
    records = read_whole_stream(platform.aws("kinesis"), local_name(STAGE, "EventsStream"))
    events = [decode_stream_event(r["Data"]) for r in records if r["PartitionKey"] == session_id]
    return [e for e in events if isinstance(e, SessionExpiredEvent)]


def queue_depth(platform: LocalPlatform, logical_id: str) -> int:
    sqs = platform.aws("sqs")
    url = sqs.get_queue_url(QueueName=local_name(STAGE, logical_id))["QueueUrl"]
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(attributes[name]) for name in names)


def ingest_barrier(platform: LocalPlatform, partition_key: str) -> None:
    """Waits until ingest has handled every record now on ``partition_key``'s shard.

    A tool-call event put after them on the same partition key (so the same shard, read in
    order) is ingested only once the records before it were acknowledged or dead-lettered; the
    usage counter of its principal (one of its own) is the sign. It has no session, so it writes
    nothing but usage.
    """
    now = utc_now_iso()
    barrier = ToolCallEvent(
        event_id=f"barrier-{uuid.uuid4().hex}",
        principal=f"e2e-barrier-{uuid.uuid4().hex[:8]}",
        tool="barrier",
        status="ok",
        started_at=now,
        finished_at=now,
        request_bytes=0,
        response_bytes=0,
        duration_ms=0,
    )
    platform.aws("kinesis").put_record(
        StreamName=local_name(STAGE, "EventsStream"), Data=barrier.to_bytes(), PartitionKey=partition_key
    )
    usage_sk = ts.usage_sk(barrier.started_date, barrier.tool)
    usage_key = {"pk": {"S": ts.usage_pk(barrier.principal)}, "sk": {"S": usage_sk}}
    table = local_name(STAGE, "DataSessionTable")
    wait_for(
        lambda: "Item" in platform.aws("dynamodb").get_item(TableName=table, Key=usage_key, ConsistentRead=True),
        PIPELINE_DEADLINE_S,
        "ingest to reach the barrier event behind the expiry event",
    )


def test_a4_ttl_expiry_runs_end_to_end_and_leaves_every_dlq_empty(platform: LocalPlatform) -> None:
    """A4/A5: Given a session with one committed note, when its metadata ttl is set in the
    past in the emulator, then within a deadline the sweeper removes it as DynamoDB's TTL would
    (audited as a TTL expiry by the service principal), the audit function writes the session
    summary, revokes the held items and publishes a session.expired event on the stream, and
    the ingest function acknowledges it: the ingest, audit, producer and expiry-events DLQs
    are all empty."""
    note = f"expiry-{uuid.uuid4().hex[:8]}"
    session_id = open_session_with_note(platform, note)
    metadata_key = {"pk": {"S": ts.session_pk(session_id)}, "sk": {"S": ts.METADATA_SK}}
    # The endpoint commits the note with its call record (D4) before answering.
    assert any(item["sk"]["S"].startswith(ts.TOOL_RECORD_PREFIX) for item in session_items(platform, session_id))

    # When: time passes for this session (its ttl, epoch seconds D5, is now in the past)
    platform.aws("dynamodb").update_item(
        TableName=local_name(STAGE, "DataSessionTable"),
        Key=metadata_key,
        UpdateExpression="SET #ttl = :past",
        ExpressionAttributeNames={"#ttl": ts.TTL},
        ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 5)}},
    )

    # Then: the summary, written once, with the event marked published
    def summary() -> dict[str, Any] | None:
        found = [i for i in audit_items(platform, session_id) if i["sk"]["S"] == ts.AUDIT_SUMMARY_SK]
        return found[0] if found and "event_published_at" in found[0] else None

    stored = wait_for(summary, PIPELINE_DEADLINE_S, "the session summary with its event published")
    assert json.loads(stored["summary"]["S"])["tool_calls"] == 1
    # and the REMOVE reached the audit as a TTL deletion by the service, not as an explicit delete
    (removal,) = [
        r
        for r in audit_records(audit_items(platform, session_id))
        if r["event_name"] == "REMOVE" and r["item"] == ts.METADATA_SK
    ]
    assert removal["ttl_expiry"] is True
    assert removal["who"]["principal_id"] == ts.TTL_PRINCIPAL
    # and the held items (call record and marker) were revoked: nothing of the session is left
    wait_for(lambda: not session_items(platform, session_id), PIPELINE_DEADLINE_S, "the held items to be revoked")
    # and exactly one typed session.expired event is on the stream, under the session's key (K3)
    (event,) = wait_for(lambda: expiry_events(platform, session_id), PIPELINE_DEADLINE_S, "the session.expired event")
    assert (event.event_id, event.tool_calls) == (f"session.expired#{session_id}", 1)

    # When ingest has handled everything on the session's shard, the expiry event included
    ingest_barrier(platform, session_id)
    # Then no DLQ holds anything: the expiry was never poison, nowhere
    assert {name: queue_depth(platform, name) for name in DLQS} == dict.fromkeys(DLQS, 0)
