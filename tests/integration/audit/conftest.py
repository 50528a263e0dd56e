from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator

import boto3
import pytest

from mcp_platform.config import EnvVars
from tests.integration.audit.audit_function import EVENT_STREAM, AuditFunction
from tests.support.session_stream import AUDIT_TABLE, REGION, SESSION_TABLE, aws_test_env, moto_tables


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
        monkeypatch.setenv(EnvVars.LOG_LEVEL, "CRITICAL")
        # The handler builds its objects at import (module scope): import it fresh per test.
        sys.modules.pop("audit_handler", None)
        handler = importlib.import_module("audit_handler")
        yield AuditFunction(handler, tables, kinesis, sqs, dlq_url)
        sys.modules.pop("audit_handler", None)
