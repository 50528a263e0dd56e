"""One cold start of an event function in one process, for counting its instructions: import the
handler module (its module scope builds settings, logging, metrics and clients, as Lambda's
init does) and invoke it once with a one-record batch shaped as its event source delivers it.

``python cold_event.py ingest|audit|worker`` exits 0 only when the invocation answered a partial
batch response with no failed record. The function's AWS calls go to the zero-latency stub the
caller names in ``AWS_ENDPOINT_URL_*``. Run under ``valgrind --tool=callgrind``, its instruction
count is the CPU work of a cold start to the first batch answered (bench_functions.py).
"""

from __future__ import annotations

import base64
import importlib
import json
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

REGION = "us-east-1"
ACCOUNT = "123456789012"
HANDLERS = {"ingest": "ingest_handler", "audit": "audit_handler", "worker": "task_worker"}


@dataclass
class LambdaContext:
    """The attributes of Lambda's context object that handlers read."""

    function_name: str
    memory_limit_in_mb: int = 256
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/bench"
    log_stream_name: str = "bench"
    invoked_function_arn: str = ""

    def __post_init__(self) -> None:
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


def ingest_event() -> dict[str, Any]:
    """One tool-call event of a session, as the enhanced fan-out mapping delivers it."""
    body = {
        "event_id": "call-1",
        "principal": "bench",
        "tool": "echo",
        "status": "ok",
        "started_at": "2026-11-29T10:00:01.000000Z",
        "finished_at": "2026-11-29T10:00:01.250000Z",
        "request_bytes": 100,
        "response_bytes": 1000,
        "duration_ms": 250.5,
        "session_id": "sess-1",
        "v": 1,
    }
    sequence = "4959" + "0" * 51 + "1"
    return {
        "Records": [
            {
                "kinesis": {
                    "kinesisSchemaVersion": "1.0",
                    "partitionKey": "sess-1",
                    "sequenceNumber": sequence,
                    "data": base64.b64encode(json.dumps(body).encode()).decode(),
                    "approximateArrivalTimestamp": time.time(),
                },
                "eventSource": "aws:kinesis",
                "eventVersion": "1.0",
                "eventID": f"shardId-000000000000:{sequence}",
                "eventName": "aws:kinesis:record",
                "invokeIdentityArn": f"arn:aws:iam::{ACCOUNT}:role/ingest",
                "awsRegion": REGION,
                "eventSourceARN": f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/bench",
            }
        ]
    }


def audit_event() -> dict[str, Any]:
    """One session's metadata changed (a MODIFY with both images), as the table stream delivers it."""
    keys = {"pk": {"S": "session#sess-1"}, "sk": {"S": "metadata"}}
    old = {**keys, "status": {"S": "active"}, "version": {"N": "1"}, "ttl": {"N": str(int(time.time()) + 3600)}}
    new = {**old, "version": {"N": "2"}, "context": {"L": [{"M": {"role": {"S": "user"}, "text": {"S": "hi"}}}]}}
    return {
        "Records": [
            {
                "eventID": "1",
                "eventName": "MODIFY",
                "eventVersion": "1.1",
                "eventSource": "aws:dynamodb",
                "awsRegion": REGION,
                "dynamodb": {
                    "ApproximateCreationDateTime": time.time(),
                    "Keys": keys,
                    "NewImage": new,
                    "OldImage": old,
                    "SequenceNumber": "100000000000000000001",
                    "SizeBytes": 200,
                    "StreamViewType": "NEW_AND_OLD_IMAGES",
                },
                "eventSourceARN": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/bench/stream/2026-01-01T00:00:00.000",
            }
        ]
    }


def worker_event() -> dict[str, Any]:
    """One task message (the task is not in the table: the worker acknowledges it)."""
    return {
        "Records": [
            {
                "messageId": "m-1",
                "receiptHandle": "r-1",
                "body": json.dumps({"taskId": "task-1"}),
                "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": str(int(time.time() * 1000))},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": f"arn:aws:sqs:{REGION}:{ACCOUNT}:tasks",
                "awsRegion": REGION,
            }
        ]
    }


EVENTS = {"ingest": ingest_event, "audit": audit_event, "worker": worker_event}


def main(function: str) -> None:
    module = importlib.import_module(HANDLERS[function])
    response = module.lambda_handler(EVENTS[function](), LambdaContext(function_name=f"bench-{function}"))
    if not isinstance(response, dict) or response.get("batchItemFailures"):
        raise SystemExit(f"{function}: unexpected response {response!r}")


if __name__ == "__main__":
    main(sys.argv[1])
