"""The message an event source mapping sends to its on-failure destination (pure).

Same shape as Lambda's on-failure record for stream sources: a pointer to the failed records
(shard and sequence range), not the records themselves, so an operator replays them from the
stream with GetShardIterator(AT_SEQUENCE_NUMBER) while the stream still retains them.
"""

from __future__ import annotations

import uuid
from typing import Any

from mcp_platform.ops.lambda_records import SourceKind, arrival_of, sequence_of
from mcp_platform.protocol.clock import iso_utc

RETRIES_EXHAUSTED = "RetryAttemptsExhausted"
RECORD_AGE_EXCEEDED = "RecordAgeExceeded"


def failure_record(
    *,
    kind: SourceKind,
    records: list[dict[str, Any]],
    shard_id: str,
    stream_arn: str,
    function_arn: str,
    condition: str,
    invoke_count: int,
    function_error: str | None,
    now: float,
) -> dict[str, Any]:
    response: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
    if function_error:
        response["functionError"] = function_error
    return {
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": function_arn,
            "condition": condition,
            "approximateInvokeCount": invoke_count,
        },
        "responseContext": response,
        "version": "1.0",
        "timestamp": _iso(now),
        kind.batch_info_key: {
            "shardId": shard_id,
            "startSequenceNumber": sequence_of(kind, records[0]),
            "endSequenceNumber": sequence_of(kind, records[-1]),
            "approximateArrivalOfFirstRecord": _iso(arrival_of(kind, records[0])),
            "approximateArrivalOfLastRecord": _iso(arrival_of(kind, records[-1])),
            "batchSize": len(records),
            "streamArn": stream_arn,
        },
    }


def _iso(epoch: float) -> str:
    return iso_utc(epoch, "milliseconds")
