"""Test support: a moto session table whose stream is read back as Lambda-shaped records.

moto emits real DynamoDB Streams records (INSERT/MODIFY/REMOVE, both images, SequenceNumber);
they are converted to the event shape Lambda delivers. TTL never fires on moto, so a TTL removal
is a real DeleteItem whose record gets the service ``userIdentity`` added by hand.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from moto import mock_aws

from mcp_platform.adapters.dynamodb import table_schema as ts
from tests.support.aws import set_fake_aws_env

if TYPE_CHECKING:
    from mypy_boto3_dynamodbstreams.type_defs import RecordTypeDef

REGION = "us-east-1"
SESSION_TABLE = "sessions"
AUDIT_TABLE = "audit"
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


def aws_test_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Includes AWS_ACCOUNT_ID_ENDPOINT_MODE=disabled: botocore would route stream calls to an
    # account-specific host mock_aws does not know.
    set_fake_aws_env(monkeypatch)


def _key_schema() -> dict[str, Any]:
    return {
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
    }


def _lambda_value(value: Any) -> Any:
    """boto3 parsed binary to bytes; Lambda delivers it as base64 text."""
    if isinstance(value, dict):
        return {k: _lambda_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lambda_value(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def to_lambda_record(record: Mapping[str, Any], stream_arn: str) -> dict[str, Any]:
    ddb = dict(record["dynamodb"])
    ddb["ApproximateCreationDateTime"] = int(ddb["ApproximateCreationDateTime"].timestamp())
    out = {
        "eventID": record["eventID"],
        "eventName": record["eventName"],
        "eventVersion": record["eventVersion"],
        "eventSource": "aws:dynamodb",
        "awsRegion": record["awsRegion"],
        "dynamodb": _lambda_value(ddb),
        "eventSourceARN": stream_arn,
    }
    return out


def as_ttl_removal(record: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(record))
    out["userIdentity"] = dict(TTL_IDENTITY)
    return out


def event_of(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"Records": [copy.deepcopy(r) for r in records]}


class MotoSessionTable:
    """The session table (stream NEW_AND_OLD_IMAGES, D9) and the audit table, on moto."""

    def __init__(self) -> None:
        self.client = boto3.client("dynamodb", region_name=REGION)
        self.streams = boto3.client("dynamodbstreams", region_name=REGION)
        created = self.client.create_table(
            TableName=SESSION_TABLE,
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
            **_key_schema(),
        )
        self.stream_arn: str = created["TableDescription"]["LatestStreamArn"]
        self.client.create_table(TableName=AUDIT_TABLE, **_key_schema())
        self._last_sequence: str | None = None

    def put(self, item: Mapping[str, Any]) -> None:
        self.client.put_item(TableName=SESSION_TABLE, Item=dict(item))

    def update(self, pk: str, sk: str, expression: str, values: Mapping[str, Any]) -> None:
        self.client.update_item(
            TableName=SESSION_TABLE,
            Key={"pk": {"S": pk}, "sk": {"S": sk}},
            UpdateExpression=expression,
            ExpressionAttributeValues=dict(values),
        )

    def delete(self, pk: str, sk: str) -> None:
        self.client.delete_item(TableName=SESSION_TABLE, Key={"pk": {"S": pk}, "sk": {"S": sk}})

    def drain(self) -> list[dict[str, Any]]:
        """Records written since the last drain, as Lambda delivers them (one shard on moto)."""
        shard = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"][0]
        # A fresh iterator each poll: moto iterators go wrong across failed writes.
        if self._last_sequence is None:
            position: dict[str, Any] = {"ShardIteratorType": "TRIM_HORIZON"}
        else:
            position = {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": self._last_sequence}
        iterator = self.streams.get_shard_iterator(StreamArn=self.stream_arn, ShardId=shard["ShardId"], **position)[
            "ShardIterator"
        ]
        records: list[RecordTypeDef] = []
        while iterator:
            page = self.streams.get_records(ShardIterator=iterator, Limit=1000)
            records.extend(page["Records"])
            if not page["Records"]:
                break
            iterator = page.get("NextShardIterator")
        if records:
            self._last_sequence = records[-1]["dynamodb"]["SequenceNumber"]
        return [to_lambda_record(r, self.stream_arn) for r in records]

    def session_items(self, session_id: str) -> list[dict[str, Any]]:
        return self.client.query(
            TableName=SESSION_TABLE,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": ts.session_pk(session_id)}},
            ConsistentRead=True,
        )["Items"]

    def audit_items(self, session_id: str | None = None) -> list[dict[str, Any]]:
        if session_id is None:
            return self.client.scan(TableName=AUDIT_TABLE, ConsistentRead=True)["Items"]
        return self.client.query(
            TableName=AUDIT_TABLE,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": ts.session_pk(session_id)}},
            ConsistentRead=True,
        )["Items"]


def audit_records(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The change records among audit items (not the summaries), as the trail reads them: an item
    stores only what its key, images and ``who`` do not give back."""
    from mcp_platform.adapters.dynamodb.audit_trail import to_record
    from mcp_platform.adapters.dynamodb.audit_writer import EVENT_NAME

    return [to_record(item) for item in items if EVENT_NAME in item]


@contextmanager
def moto_tables() -> Iterator[MotoSessionTable]:
    with mock_aws():
        yield MotoSessionTable()


def metadata_item(
    session_id: str, *, version: int = 1, ttl: int = 2_000_000_000, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "pk": {"S": ts.session_pk(session_id)},
        "sk": {"S": ts.METADATA_SK},
        ts.STATUS: {"S": ts.STATUS_ACTIVE},
        ts.OWNER: {"S": "principal-1"},
        ts.KIND: {"S": ts.KIND_APPLICATION},
        ts.VERSION: {"N": str(version)},
        ts.TTL: {"N": str(ttl)},
        ts.CREATED_AT: {"S": "2026-11-29T10:00:00Z"},
        ts.UPDATED_AT: {"S": "2026-11-29T10:05:00Z"},
        ts.CONTEXT: {"L": [{"M": {"role": {"S": "user"}, "content": {"S": "hello"}}}]},
    }
    item.update(extra or {})
    return item


def tool_record(session_id: str, started_at: str, call_id: str) -> dict[str, Any]:
    return {
        "pk": {"S": ts.session_pk(session_id)},
        "sk": {"S": ts.tool_record_sk(started_at, call_id)},
        "tool_name": {"S": "echo"},
        "result": {"S": "ok"},
    }


def tool_marker(session_id: str, started_at: str, call_id: str) -> dict[str, Any]:
    return {
        "pk": {"S": ts.session_pk(session_id)},
        "sk": {"S": ts.tool_call_marker_sk(call_id)},
        "record_sk": {"S": ts.tool_record_sk(started_at, call_id)},
    }
