"""Stream records as Lambda delivers them to a function, built from what GetRecords returns (pure).

Kinesis: data base64-encoded, ``eventSourceARN`` is the consumer ARN when the mapping reads
through an enhanced fan-out consumer (K5). DynamoDB Streams: images in DynamoDB JSON with
binary values base64-encoded, ``ApproximateCreationDateTime`` in epoch seconds.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any


class SourceKind(Enum):
    KINESIS = "kinesis"
    DYNAMODB = "dynamodb"

    @property
    def batch_info_key(self) -> str:
        return "KinesisBatchInfo" if self is SourceKind.KINESIS else "DDBStreamBatchInfo"


def kinesis_event_record(record: Mapping[str, Any], *, shard_id: str, source_arn: str, region: str) -> dict[str, Any]:
    arrival = record["ApproximateArrivalTimestamp"]
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": record["PartitionKey"],
            "sequenceNumber": record["SequenceNumber"],
            "data": base64.b64encode(bytes(record["Data"])).decode("ascii"),
            "approximateArrivalTimestamp": _epoch(arrival),
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"{shard_id}:{record['SequenceNumber']}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": "arn:aws:iam::123456789012:role/local-platform",
        "awsRegion": region,
        "eventSourceARN": source_arn,
    }


def dynamodb_event_record(record: Mapping[str, Any], *, stream_arn: str) -> dict[str, Any]:
    change = dict(record["dynamodb"])
    change["ApproximateCreationDateTime"] = int(_epoch(change["ApproximateCreationDateTime"]))
    out: dict[str, Any] = {
        "eventID": record["eventID"],
        "eventName": record["eventName"],
        "eventVersion": record.get("eventVersion", "1.1"),
        "eventSource": "aws:dynamodb",
        "awsRegion": record["awsRegion"],
        "dynamodb": _base64_binaries(change),
        "eventSourceARN": stream_arn,
    }
    if "userIdentity" in record:
        out["userIdentity"] = record["userIdentity"]
    return out


def sequence_of(kind: SourceKind, record: dict[str, Any]) -> str:
    if kind is SourceKind.KINESIS:
        return str(record["kinesis"]["sequenceNumber"])
    return str(record["dynamodb"]["SequenceNumber"])


def arrival_of(kind: SourceKind, record: dict[str, Any]) -> float:
    """Epoch seconds at which the record entered the stream (drives MaximumRecordAge)."""
    if kind is SourceKind.KINESIS:
        return float(record["kinesis"]["approximateArrivalTimestamp"])
    return float(record["dynamodb"]["ApproximateCreationDateTime"])


def _epoch(value: Any) -> float:
    return value.timestamp() if isinstance(value, datetime) else float(value)


def _base64_binaries(value: Any) -> Any:
    """boto3 parses B/BS values to bytes; Lambda delivers them as base64 text."""
    if isinstance(value, dict):
        return {key: _base64_binaries(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_base64_binaries(item) for item in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value
