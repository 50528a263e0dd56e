"""Wiring: the tool-call runner and the event producer count into the metrics they are built with."""

from __future__ import annotations

import io
import json
from typing import Any

from botocore.exceptions import ClientError

from mcp_platform.application.metrics import EVENTS_DEAD_LETTERED, MetricsWriter
from mcp_platform.bootstrap.runtime import build_runtime
from mcp_platform.config import EnvVars, Settings


class RefusingKinesis:
    """Every PutRecords call refused as a stream that does not exist (no retry, straight to the DLQ)."""

    def put_records(self, **request: Any) -> dict[str, Any]:
        raise ClientError({"Error": {"Code": "ResourceNotFoundException", "Message": "no"}}, "PutRecords")


class AcceptingSqs:
    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        return {"Successful": [{"Id": entry["Id"]} for entry in Entries], "Failed": []}


def test_the_runner_and_the_producer_count_into_the_runtimes_metrics() -> None:
    # Given a runtime with an event stream, built with metrics on a stream the test reads
    settings = Settings.from_mapping(
        {
            EnvVars.SESSION_TABLE: "sessions",
            EnvVars.EVENT_STREAM: "events",
            EnvVars.PRODUCER_DLQ_URL: "https://sqs.local/dlq",
        }
    )
    stream = io.StringIO()
    metrics = MetricsWriter("McpPlatform", "mcp-endpoint", stream)
    runtime = build_runtime(
        settings,
        dynamodb=object(),
        kinesis=RefusingKinesis(),
        sqs=AcceptingSqs(),
        metrics=metrics,
    )
    # Then the runner counts store conflicts and throttles there
    assert runtime.runner.metrics is metrics
    # And a record the stream refuses is counted there once it is dead-lettered
    assert runtime.producer is not None
    runtime.producer.add_record(b"{}", "k")
    assert runtime.producer.flush().dead_lettered == 1
    (line,) = map(json.loads, stream.getvalue().splitlines())
    assert line[EVENTS_DEAD_LETTERED] == 1
