"""Governance: the rate-limit counters table (G1), built only with the context key ``rate_limits``.

Every instance of the endpoint admits a request against the same counters, one item each
(``pk``), expiring by TTL (``ttl``) once its window is over. The counters live a second to a
day, so the table has no point-in-time recovery and no stream; it is otherwise kept like the
platform's other tables: on demand, encrypted with the platform key, removal policy and deletion
protection per stage.

Quotas (G2) need no resource here: the endpoint reads the usage items ingest keeps in the session
table, which both functions already reach (``MCP_QUOTAS`` is set by stacks/endpoint.py and
stacks/processing.py).
"""

from __future__ import annotations

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from mcp_platform.adapters.dynamodb import table_schema as schema
from mcp_platform.config import EnvVars
from stacks.common import deletion_protection, removal_policy
from stacks.config import PlatformConfig

# Admission adds to the counters with conditional updates (one TransactWriteItems of Update actions
# when several rules apply, which IAM authorizes per action as UpdateItem): nothing reads or deletes.
ADMISSION_ACTIONS = ("dynamodb:UpdateItem",)


class Governance(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: PlatformConfig, key: kms.IKey) -> None:
        super().__init__(scope, construct_id)
        if config.rate_limits is None:
            raise ValueError("Governance is built only with the rate_limits context key")
        self.rate_limits = config.rate_limits
        self.limits_table = dynamodb.Table(
            self,
            "LimitsTable",
            partition_key=dynamodb.Attribute(name=schema.PK, type=dynamodb.AttributeType.STRING),
            time_to_live_attribute=schema.TTL,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
            encryption_key=key,
            deletion_protection=deletion_protection(config),
            removal_policy=removal_policy(config),
        )

    def admit_at(self, function: lambda_.Function) -> None:
        """The function that admits requests (the endpoint): the rules, the table, and exactly
        the update it makes. Its role already uses the platform key (the session table's grant)."""
        function.add_environment(EnvVars.RATE_LIMITS, self.rate_limits)
        function.add_environment(EnvVars.LIMITS_TABLE, self.limits_table.table_name)
        self.limits_table.grant(function, *ADMISSION_ACTIONS)
