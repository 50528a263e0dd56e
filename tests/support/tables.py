"""The session and audit tables as the CDK data construct declares them, for tests that need a
table per test without synthesizing (tests/infra/test_data.py proves these definitions match the
template; the local platform creates its tables from the template itself)."""

from __future__ import annotations

from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts

DEV_STAGES = ("dev", "local", "test")


def session_table_definition(table_name: str, *, stage: str = "dev") -> dict[str, Any]:
    """CreateTable parameters of the session table."""
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [
            {"AttributeName": ts.PK, "KeyType": "HASH"},
            {"AttributeName": ts.SK, "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": ts.PK, "AttributeType": "S"},
            {"AttributeName": ts.SK, "AttributeType": "S"},
            {"AttributeName": ts.STATUS, "AttributeType": "S"},
            {"AttributeName": ts.TTL, "AttributeType": "N"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": ts.STATUS_TTL_INDEX,
                "KeySchema": [
                    {"AttributeName": ts.STATUS, "KeyType": "HASH"},
                    {"AttributeName": ts.TTL, "KeyType": "RANGE"},
                ],
                "Projection": {
                    "ProjectionType": "INCLUDE",
                    "NonKeyAttributes": list(ts.STATUS_TTL_INDEX_PROJECTION),
                },
            }
        ],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        "SSESpecification": {"Enabled": True},
        "DeletionProtectionEnabled": stage not in DEV_STAGES,
    }


def audit_table_definition(table_name: str) -> dict[str, Any]:
    """CreateTable parameters of the audit table (its TTL is not needed by the tests)."""
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [
            {"AttributeName": ts.AUDIT_PK, "KeyType": "HASH"},
            {"AttributeName": ts.AUDIT_SK, "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": ts.AUDIT_PK, "AttributeType": "S"},
            {"AttributeName": ts.AUDIT_SK, "AttributeType": "S"},
            {"AttributeName": ts.AUDIT_TENANT, "AttributeType": "S"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": ts.AUDIT_TENANT_INDEX,
                "KeySchema": [
                    {"AttributeName": ts.AUDIT_TENANT, "KeyType": "HASH"},
                    {"AttributeName": ts.AUDIT_SK, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
    }


def create_session_table(control_client: Any, table_name: str, *, stage: str = "dev") -> dict[str, Any]:
    """Create the table, then turn on TTL and point-in-time recovery. Returns DescribeTable."""
    control_client.create_table(**session_table_definition(table_name, stage=stage))
    control_client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1})
    control_client.update_time_to_live(
        TableName=table_name, TimeToLiveSpecification={"Enabled": True, "AttributeName": ts.TTL}
    )
    control_client.update_continuous_backups(
        TableName=table_name,
        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
    )
    description: dict[str, Any] = control_client.describe_table(TableName=table_name)["Table"]
    return description
