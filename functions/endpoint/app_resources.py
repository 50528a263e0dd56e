"""The starter app's own AWS resources (CDK, run at synth; not shipped in the function's code).

``add_resources`` is applied to the endpoint and the task worker (stacks/app_resources.py): the
bookmarks table, under the platform's rules (its key, its stage's retention and deletion
protection), with each function allowed exactly the two calls the tools make and the table's name
in each function's environment, where ``mcp_tools.build_deps`` reads it.
"""

from __future__ import annotations

from aws_cdk import aws_dynamodb as dynamodb

from stacks.app_resources import AppScope

BOOKMARKS_TABLE = "BOOKMARKS_TABLE"


def add_resources(app: AppScope) -> None:
    table = dynamodb.Table(
        app.scope,
        "Bookmarks",
        partition_key=dynamodb.Attribute(name="owner", type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="url", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
        encryption_key=app.key,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        deletion_protection=app.deletion_protection,
        removal_policy=app.removal_policy,
    )
    for function in app.functions:
        table.grant(function, "dynamodb:PutItem", "dynamodb:Query")
        function.add_environment(BOOKMARKS_TABLE, table.table_name)
