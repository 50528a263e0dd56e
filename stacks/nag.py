"""cdk-nag (AwsSolutions) acknowledgements, each on the narrowest construct, each with its reason.

Every finding cdk-nag reports on this platform is either fixed in the constructs or listed here;
synth fails on anything else (see stacks/app_builder.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct

if TYPE_CHECKING:
    from stacks.platform_stack import PlatformStack

MANAGED_POLICY = "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/{}]"
# Singleton id of the function behind every AwsCustomResource (fixed in aws-cdk-lib).
AWS_CUSTOM_RESOURCE_ID = "AWS679f53fac002430cb0da5b7982bd2287"

BASIC_ROLE = (
    MANAGED_POLICY.format("AWSLambdaBasicExecutionRole"),
    "AWS-maintained policy limited to creating log streams and writing the function's logs.",
)
KMS_GRANT = (
    "is restricted to the one platform key; the wildcard only spans the GenerateDataKey* / ReEncrypt* "
    "variants that CDK's grant for SQS and Kinesis encryption needs."
)


def _ack(scope: IConstruct, rule: str, reason: str) -> None:
    Validations.of(scope).acknowledge(Acknowledgment(id=rule, reason=reason))


def _index_rule(table: dynamodb.Table) -> str:
    stack = Stack.of(table)
    logical_id = stack.resolve(stack.get_logical_id(table.node.default_child))  # type: ignore[arg-type]
    return f"AwsSolutions-IAM5[Resource::<{logical_id}.Arn>/index/*]"


def _function(fn: lambda_.Function, table: dynamodb.Table, *, in_vpc: bool, lists_streams: bool) -> None:
    _ack(fn, *BASIC_ROLE)
    _ack(
        fn,
        "AwsSolutions-L1",
        "The runtime is the Python named in .python-version (context lambda_python), the one the test suite "
        "runs the deployed code on; a newer runtime is adopted when the build machines can run it too.",
    )
    if in_vpc:
        _ack(
            fn,
            MANAGED_POLICY.format("AWSLambdaVPCAccessExecutionRole"),
            "AWS-maintained policy with only the ENI actions Lambda needs to attach the function to the VPC.",
        )
    _ack(fn, "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]", f"kms:GenerateDataKey* {KMS_GRANT}")
    _ack(fn, "AwsSolutions-IAM5[Action::kms:ReEncrypt*]", f"kms:ReEncrypt* {KMS_GRANT}")
    _ack(fn, _index_rule(table), "Only the indexes of the session table (status-ttl-index for D8 queries).")
    _ack(
        fn,
        "AwsSolutions-IAM5[Resource::*]",
        "X-Ray PutTraceSegments/PutTelemetryRecords (Lambda tracing, active or pass-through)"
        + (" and dynamodb:ListStreams (event source mapping)" if lists_streams else "")
        + " support no resource-level permissions; every other statement names the platform's ARNs.",
    )


def acknowledge(stack: PlatformStack) -> None:
    table = stack.data.session_table
    in_vpc = stack.network is not None
    _function(stack.endpoint.function, table, in_vpc=in_vpc, lists_streams=False)
    _function(stack.processing.ingest, table, in_vpc=False, lists_streams=False)
    _function(stack.processing.audit, table, in_vpc=False, lists_streams=True)
    audit_index = (_index_rule(stack.data.audit_table), "Only the audit table's tenant-index (a tenant's sessions).")
    for reader in (stack.endpoint.function, stack.processing.audit):  # CDK grants a table's every index
        _ack(reader, *audit_index)
    if stack.tasks is not None:
        _function(stack.tasks.function, table, in_vpc=in_vpc, lists_streams=False)
        _ack(stack.tasks.function, *audit_index)
        _ack(
            stack.tasks.dlq,
            "AwsSolutions-SQS3",
            "This queue is itself the task queue's dead-letter queue; a DLQ of a DLQ would only move the problem.",
        )

    if stack.dax is not None:
        _ack(stack.dax.role, _index_rule(table), "DAX serves Query on the session table's own indexes only.")

    for queue in stack.dlqs.values():
        _ack(
            queue,
            "AwsSolutions-SQS3",
            "This queue is itself a dead-letter queue (event source mapping on-failure destination or "
            "the producer's/expiry side effects' DLQ); a DLQ of a DLQ would only move the problem.",
        )

    _ack(
        stack.stream.stream,
        "AwsSolutions-KDS3",
        "K9: encrypted with the platform's customer-managed key (rotated), so key policy and CloudTrail "
        "key usage stay under the platform's control; aws/kinesis would give neither.",
    )

    _ack(
        stack.request_state.secret,
        "AwsSolutions-SMG4",
        "The requestState HMAC keys rotate by key id (add a key, make it current, drop the old one after "
        "the 15-minute state lifetime: README, Interactive tools); a single-value rotation Lambda would "
        "invalidate every state in flight at each rotation.",
    )

    if stack.governance is not None:
        _ack(
            stack.governance.limits_table,
            "AwsSolutions-DDB3",
            "G1: the table holds only rate-limit counters, each expiring by TTL once its window (a second to a "
            "day) is over; a restore would bring back counters of windows already gone, so point-in-time "
            "recovery would be paid for nothing.",
        )

    if stack.facade is not None:
        _ack(
            stack.facade.keys,
            "AwsSolutions-SMG4",
            "The OAuth facade's signing seeds rotate by key id (add a seed, make it current, drop the old one once "
            "its access tokens have expired: README, OAuth); a single-value rotation Lambda would invalidate every "
            "token in flight at each rotation.",
        )
        if stack.facade.upstream_secret is not None:
            _ack(
                stack.facade.upstream_secret,
                "AwsSolutions-SMG4",
                "A copy of the facade's Cognito app client secret, written by the stack from the client itself; "
                "Cognito cannot rotate a client secret in place, so it changes with the client (redeploy).",
            )

    if stack.cognito is not None:
        _ack(
            stack.cognito.user_pool,
            "AwsSolutions-COG8",
            "Essentials plan: sign-in is administrator-created users with required TOTP MFA and no self "
            "sign-up; the Plus plan's threat protection is billed per monthly active user and is a "
            "deliberate choice per deployment (set feature_plan in stacks/cognito.py).",
        )

    _ack(
        stack.deployment.role,
        MANAGED_POLICY.format("AWSCodeDeployRoleForLambdaLimited"),
        "AWS-maintained policy CodeDeploy needs to move a Lambda alias between versions and read the "
        "rollback alarms; its invoke permission is limited to functions named CodeDeployHook_*, and the "
        "platform has none.",
    )
    _edge(stack)

    provider = stack.node.try_find_child(AWS_CUSTOM_RESOURCE_ID)
    if provider is not None:
        _ack(provider, *BASIC_ROLE)


def _edge(stack: PlatformStack) -> None:
    """The edge in front of the endpoint (context key ``edge``)."""
    if stack.origin_verify is not None:
        _ack(
            stack.origin_verify.secret,
            "AwsSolutions-SMG4",
            "The origin-verify values rotate by key id (add a value, deploy with origin_verify_key naming it, "
            "drop the old one: Choosing an edge); a single-value rotation Lambda would refuse every request "
            "CloudFront sends between the secret's change and the distribution's.",
        )
    if stack.cloudfront is not None:
        distribution = stack.cloudfront.distribution
        _ack(
            distribution,
            "AwsSolutions-CFR1",
            "An MCP endpoint serves its callers wherever they are; the WAF web ACL's rules, not a country "
            "list, decide. A deployment that serves some countries only adds a geo restriction.",
        )
        _ack(
            distribution,
            "AwsSolutions-CFR3",
            "The endpoint logs every request it answers (JSON lines with the trace id and status) and the WAF "
            "web ACL keeps metrics and sampled requests of what it refused; CloudFront standard logs (billed "
            "per log line delivered) are a per-deployment choice.",
        )
        if stack.config.domain_name is None:
            _ack(
                distribution,
                "AwsSolutions-CFR4",
                "Without a custom domain the distribution serves CloudFront's default *.cloudfront.net "
                "certificate, for which CloudFront fixes the security policy; with domain_name it is "
                "TLSv1.2_2021.",
            )
    if stack.api_gateway is not None:
        api = stack.api_gateway.api
        _ack(
            api,
            "AwsSolutions-APIG2",
            "Every path is proxied to the endpoint, which validates each request itself (media type, size, "
            "JSON-RPC envelope, each tool's input schema) and answers a JSON-RPC error; a model at API Gateway "
            "could only repeat the first checks, with a less precise error.",
        )
        _ack(
            api.deployment_stage,
            "AwsSolutions-APIG6",
            "Execution logging needs the account-wide API Gateway CloudWatch role, which is the account's to "
            "own rather than one stack's; the stage writes access logs and the endpoint logs every request.",
        )
        for method in api.methods:
            _ack(
                method,
                "AwsSolutions-APIG4",
                "Default deny is the endpoint's: it authenticates every MCP request itself (bearer API keys or "
                "OAuth tokens, refused with 401 and a challenge); the OAuth metadata and facade paths are "
                "public by specification.",
            )
            _ack(
                method,
                "AwsSolutions-COG4",
                "Tokens (Cognito's or the OAuth facade's) are validated by the endpoint, which also accepts API "
                "keys and serves the public OAuth discovery paths; a Cognito authorizer would refuse both.",
            )
