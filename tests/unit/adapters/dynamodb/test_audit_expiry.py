"""A4: TTL expiry is told apart from explicit deletes; its side effects are idempotent."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.audit_writer import AuditWriter
from mcp_platform.adapters.dynamodb.session_remains import SessionRemains
from mcp_platform.adapters.dynamodb.sessions.table import context_item
from mcp_platform.adapters.dynamodb.stream_images import read_stream_change
from mcp_platform.adapters.kinesis.audit_publisher import KinesisEventPublisher
from mcp_platform.application.audit.expiry import CleanupIncomplete, SessionExpiryHandler
from mcp_platform.application.audit.records import StreamChange
from tests.support.session_stream import (
    AUDIT_TABLE,
    REGION,
    SESSION_TABLE,
    MotoSessionTable,
    as_ttl_removal,
    metadata_item,
    tool_marker,
    tool_record,
)

EXPIRES = int(datetime.fromisoformat("2026-11-29T11:00:00+00:00").timestamp())
CALLS = [("2026-11-29T10:10:00Z", "c1"), ("2026-11-29T10:20:00Z", "c2")]


class RecordingPublisher:
    def __init__(self, failures: int = 0) -> None:
        self.events: list[Mapping[str, Any]] = []
        self.failures = failures

    def publish(self, event: Mapping[str, Any]) -> None:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("stream unavailable")
        self.events.append(event)


def _expired_session(tables: MotoSessionTable, session_id: str = "s1") -> StreamChange:
    """A session with two tool calls whose metadata TTL removed; returns the REMOVE change."""
    tables.put(metadata_item(session_id, version=3, ttl=EXPIRES))
    for started, call in CALLS:
        tables.put(tool_record(session_id, started, call))
        tables.put(tool_marker(session_id, started, call))
        # D1/D3 as amended: each call's appended context, an item of its own (no ttl of its own)
        tables.put(context_item(session_id, ts.context_item_sk(started, call), [{"text": call}]))
    tables.delete(ts.session_pk(session_id), ts.METADATA_SK)
    return read_stream_change(as_ttl_removal(tables.drain()[-1]))


def _handler(tables: MotoSessionTable, publisher: Any, client: Any = None) -> SessionExpiryHandler:
    writer = AuditWriter(tables.client, AUDIT_TABLE)
    remains = SessionRemains(client or tables.client, SESSION_TABLE, sleep=lambda _: None)
    return SessionExpiryHandler(remains, writer, publisher)


def test_a4_ttl_expiry_revokes_held_items_writes_summary_and_emits_event(tables: MotoSessionTable) -> None:
    # Given an expired session holding two tool records, two markers and two context items, and
    # another live session
    tables.put(tool_record("other", *CALLS[0]))
    change = _expired_session(tables)
    publisher = RecordingPublisher()
    # When the TTL removal's side effects run
    outcome = _handler(tables, publisher).handle(change)
    # Then everything the session held is gone, the other session is untouched,
    assert tables.session_items("s1") == []
    assert len(tables.session_items("other")) == 1
    # the summary holds the tool-call count, duration created->expired and last activity,
    summary = AuditWriter(tables.client, AUDIT_TABLE).get_summary("s1")
    assert summary is not None
    assert summary["tool_calls"] == 2
    assert summary["duration_seconds"] == 3600
    assert summary["last_activity"] == "2026-11-29T10:20:00Z"
    assert (summary["owner"], summary["final_version"]) == ("principal-1", 3)
    assert summary["event_published"] is True
    # and one "session expired" event was emitted, with a deterministic id for consumers
    assert (outcome.summary_written, outcome.deleted, outcome.event_published) == (True, 6, True)
    (event,) = publisher.events
    assert event["type"] == "session.expired" and event["event_id"] == "session.expired#s1"
    assert event["tool_calls"] == 2 and event["session_id"] == "s1"


def test_a4_redelivery_of_the_expiry_is_harmless(tables: MotoSessionTable) -> None:
    # Given an expiry whose side effects already ran
    change = _expired_session(tables)
    publisher = RecordingPublisher()
    handler = _handler(tables, publisher)
    handler.handle(change)
    # When the same stream record is delivered again
    again = handler.handle(change)
    # Then nothing new happens: no second summary, nothing left to delete, no second event
    assert (again.summary_written, again.deleted, again.event_published) == (False, 0, False)
    assert again.summary["tool_calls"] == 2
    assert len(publisher.events) == 1


def test_a4_redelivery_after_a_failed_publish_keeps_the_original_summary(tables: MotoSessionTable) -> None:
    # Given a first delivery that wrote the summary, deleted the held items, then failed to publish
    change = _expired_session(tables)
    publisher = RecordingPublisher(failures=1)
    handler = _handler(tables, publisher)
    with pytest.raises(RuntimeError, match="stream unavailable"):
        handler.handle(change)
    assert tables.session_items("s1") == []
    # When the record is redelivered
    outcome = handler.handle(change)
    # Then the event owed is published once, still counting the two (now deleted) tool calls
    assert outcome.event_published and not outcome.summary_written
    (event,) = publisher.events
    assert event["tool_calls"] == 2


def test_a4_explicit_delete_and_tool_record_ttl_are_not_session_expiry(tables: MotoSessionTable) -> None:
    # Given an explicit DeleteItem of session metadata and a TTL removal of a tool record
    tables.put(metadata_item("s1"))
    tables.put(tool_record("s1", *CALLS[0]))
    tables.delete(ts.session_pk("s1"), ts.METADATA_SK)
    tables.delete(ts.session_pk("s1"), ts.tool_record_sk(*CALLS[0]))
    explicit_record, tool_record_removal = tables.drain()[-2:]
    # When they are classified
    explicit = read_stream_change(explicit_record)
    tool_ttl = read_stream_change(as_ttl_removal(tool_record_removal))
    # Then neither is a session expiry, and the handler refuses to treat them as one
    assert not explicit.is_ttl_removal and not explicit.is_session_expiry
    assert tool_ttl.is_ttl_removal and not tool_ttl.is_session_expiry
    with pytest.raises(ValueError, match="not a session TTL expiry"):
        _handler(tables, RecordingPublisher()).handle(explicit)


class ThrottlingClient:
    """Passes calls to moto, but leaves the first ``throttled`` BatchWriteItem calls unprocessed."""

    def __init__(self, inner: Any, throttled: int) -> None:
        self._inner = inner
        self.throttled = throttled
        self.batch_calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def batch_write_item(self, **kwargs: Any) -> dict[str, Any]:
        self.batch_calls += 1
        if self.throttled:
            self.throttled -= 1
            return {"UnprocessedItems": kwargs["RequestItems"]}
        return self._inner.batch_write_item(**kwargs)


def test_a4_unprocessed_deletes_are_retried_then_reported(tables: MotoSessionTable) -> None:
    # Given batch deletes throttled twice, then a client that never processes them
    change = _expired_session(tables)
    flaky = ThrottlingClient(tables.client, throttled=2)
    # When the side effects run
    _handler(tables, RecordingPublisher(), flaky).handle(change)
    # Then the deletes succeed on the third attempt
    assert flaky.batch_calls == 3 and tables.session_items("s1") == []
    # And when deletes are never processed, the handler raises so the record is redelivered
    change2 = _expired_session(tables, "s2")
    with pytest.raises(CleanupIncomplete, match="6 held items"):
        _handler(tables, RecordingPublisher(), ThrottlingClient(tables.client, throttled=99)).handle(change2)


def test_a4_default_publisher_puts_one_kinesis_record_keyed_by_session(tables: MotoSessionTable) -> None:
    # Given the Kinesis event stream
    kinesis = boto3.client("kinesis", region_name=REGION)
    kinesis.create_stream(StreamName="events", ShardCount=1)
    publisher = KinesisEventPublisher(kinesis, "events")
    # When an expiry event is published
    publisher.publish({"type": "session.expired", "session_id": "s1", "tool_calls": 2})
    # Then exactly one record, keyed by the session id (K3), carries the event
    shard = kinesis.describe_stream(StreamName="events")["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = kinesis.get_shard_iterator(StreamName="events", ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    (record,) = kinesis.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    assert record["PartitionKey"] == "s1"
    assert json.loads(record["Data"]) == {"type": "session.expired", "session_id": "s1", "tool_calls": 2}


def test_a4_failed_publish_goes_to_the_dlq_or_raises(tables: MotoSessionTable) -> None:
    # Given an event stream that does not exist, and the expiry-events DLQ
    kinesis = boto3.client("kinesis", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    dlq = sqs.create_queue(QueueName="expiry-dlq")["QueueUrl"]
    event = {"type": "session.expired", "session_id": "s1"}
    # When the event is published
    KinesisEventPublisher(kinesis, "missing", sqs=sqs, dlq_url=dlq).publish(event)
    # Then it lands in the DLQ with the error code
    (message,) = sqs.receive_message(QueueUrl=dlq)["Messages"]
    body = json.loads(message["Body"])
    assert body["event"] == event and body["error_code"] == "ResourceNotFoundException"
    # And without a DLQ the failure propagates (never dropped silently)
    with pytest.raises(ClientError):
        KinesisEventPublisher(kinesis, "missing").publish(event)
