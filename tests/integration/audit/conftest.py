from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import boto3
import pytest

from tests.unit.audit.stream_support import (
    AUDIT_TABLE,
    REGION,
    SESSION_TABLE,
    MotoSessionTable,
    aws_test_env,
    moto_tables,
)

EVENT_STREAM = "platform-events"


@dataclass
class AuditFunction:
    """The audit Lambda's module, imported against moto, with the tables and the event stream."""

    handler: ModuleType
    tables: MotoSessionTable
    kinesis: Any
    sqs: Any
    dlq_url: str

    def invoke(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return self.handler.lambda_handler({"Records": records}, None)

    def published_events(self) -> list[tuple[str, bytes]]:
        description = self.kinesis.describe_stream(StreamName=EVENT_STREAM)["StreamDescription"]
        iterator = self.kinesis.get_shard_iterator(
            StreamName=EVENT_STREAM, ShardId=description["Shards"][0]["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records = self.kinesis.get_records(ShardIterator=iterator)["Records"]
        return [(r["PartitionKey"], r["Data"]) for r in records]


@pytest.fixture
def audit_function(monkeypatch: pytest.MonkeyPatch) -> Iterator[AuditFunction]:
    aws_test_env(monkeypatch)
    with moto_tables() as tables:
        kinesis = boto3.client("kinesis", region_name=REGION)
        kinesis.create_stream(StreamName=EVENT_STREAM, ShardCount=1)
        sqs = boto3.client("sqs", region_name=REGION)
        dlq_url = sqs.create_queue(QueueName="expiry-events-dlq")["QueueUrl"]
        monkeypatch.setenv("SESSION_TABLE_NAME", SESSION_TABLE)
        monkeypatch.setenv("AUDIT_TABLE_NAME", AUDIT_TABLE)
        monkeypatch.setenv("EVENT_STREAM_NAME", EVENT_STREAM)
        monkeypatch.setenv("EXPIRY_EVENTS_DLQ_URL", dlq_url)
        monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "CRITICAL")
        # The handler builds its objects at import (module scope): import it fresh per test.
        sys.modules.pop("audit_handler", None)
        handler = importlib.import_module("audit_handler")
        yield AuditFunction(handler, tables, kinesis, sqs, dlq_url)
        sys.modules.pop("audit_handler", None)
