"""The idempotent write every processor needs: put an item only if its key is new.

A duplicate (the key exists) is a silent success reported as ``False`` (D4, A2); any other
error propagates. Used with the plain DynamoDB client (the audit and ingest functions).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def put_if_absent(client: DynamoDBClient, table_name: str, item: dict[str, Any], partition_key: str) -> bool:
    """True when written, False when an item with this key already existed."""
    try:
        client.put_item(
            TableName=table_name,
            Item=item,
            ConditionExpression="attribute_not_exists(#pk)",
            ExpressionAttributeNames={"#pk": partition_key},
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise
    return True
