"""The audit Lambda's module imported against moto, with the tables and the event stream."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

from local.functions import LambdaContext
from tests.support.session_stream import MotoSessionTable

EVENT_STREAM = "platform-events"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:audit"


def lambda_context() -> LambdaContext:
    """What Lambda hands the handler with each invocation (Powertools' Logger reads it)."""
    return LambdaContext("audit", FUNCTION_ARN, 256, 60)


@dataclass
class AuditFunction:
    handler: ModuleType
    tables: MotoSessionTable
    kinesis: Any
    sqs: Any
    dlq_url: str

    def invoke(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return self.handler.lambda_handler({"Records": records}, lambda_context())

    def published_events(self) -> list[tuple[str, bytes]]:
        description = self.kinesis.describe_stream(StreamName=EVENT_STREAM)["StreamDescription"]
        iterator = self.kinesis.get_shard_iterator(
            StreamName=EVENT_STREAM, ShardId=description["Shards"][0]["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records = self.kinesis.get_records(ShardIterator=iterator)["Records"]
        return [(r["PartitionKey"], r["Data"]) for r in records]
