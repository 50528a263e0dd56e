"""The starter app's own AWS resources (CDK, run at synth; not shipped in the function's code).

``add_resources`` is applied to the endpoint and the task worker (stacks/app_resources.py): the
bookmarks table, with each function allowed exactly the two calls the tools make, and its name in
each function's environment, where ``mcp_tools.build_deps`` reads it.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

BOOKMARKS_TABLE = "BOOKMARKS_TABLE"


def add_resources(scope: Construct, functions: Sequence[lambda_.Function]) -> None:
    table = dynamodb.Table(
        scope,
        "Bookmarks",
        partition_key=dynamodb.Attribute(name="owner", type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="url", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        removal_policy=RemovalPolicy.RETAIN,  # a user's data outlives a stack
    )
    for function in functions:
        table.grant(function, "dynamodb:PutItem", "dynamodb:Query")
        function.add_environment(BOOKMARKS_TABLE, table.table_name)
