"""Data: the session table (D1, D8, D9, D11) and the separate audit table (A3)."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from constructs import Construct

from mcp_platform.adapters.dynamodb import table_schema as schema
from stacks.common import deletion_protection, removal_policy
from stacks.config import PlatformConfig


class Data(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: PlatformConfig, key: kms.IKey) -> None:
        super().__init__(scope, construct_id)
        common: dict[str, Any] = {
            "billing_mode": dynamodb.BillingMode.PAY_PER_REQUEST,
            "encryption": dynamodb.TableEncryption.CUSTOMER_MANAGED,
            "encryption_key": key,
            "point_in_time_recovery_specification": dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True  # D11
            ),
            "deletion_protection": deletion_protection(config),
            "removal_policy": removal_policy(config),
        }
        # D1 single table; D9 stream enabled at creation, with both images for the audit diff.
        self.session_table = dynamodb.Table(
            self,
            "SessionTable",
            partition_key=dynamodb.Attribute(name=schema.PK, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=schema.SK, type=dynamodb.AttributeType.STRING),
            time_to_live_attribute=schema.TTL,  # D5: epoch seconds
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
            **common,
        )
        # D8: "sessions expiring in the next N minutes" = Query status = :s AND ttl BETWEEN.
        # Only metadata items carry `status`, so the index stays sparse; it projects the
        # fields a cleanup needs rather than the (large) context messages.
        self.session_table.add_global_secondary_index(
            index_name=schema.STATUS_TTL_INDEX,
            partition_key=dynamodb.Attribute(name=schema.STATUS, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=schema.TTL, type=dynamodb.AttributeType.NUMBER),
            projection_type=dynamodb.ProjectionType.INCLUDE,
            non_key_attributes=list(schema.STATUS_TTL_INDEX_PROJECTION),
        )
        # A3: a separate table, so the audit processor never audits its own writes.
        self.audit_table = dynamodb.Table(
            self,
            "AuditTable",
            partition_key=dynamodb.Attribute(name=schema.AUDIT_PK, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=schema.AUDIT_SK, type=dynamodb.AttributeType.STRING),
            time_to_live_attribute=schema.AUDIT_TTL,
            **common,
        )
        # A tenant's sessions (sparse: only tenant callers' metadata records carry the key).
        self.audit_table.add_global_secondary_index(
            index_name=schema.AUDIT_TENANT_INDEX,
            partition_key=dynamodb.Attribute(name=schema.AUDIT_TENANT, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=schema.AUDIT_SK, type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
