"""DAX: a write-through item cache in front of the session table (X1, X2)."""

from __future__ import annotations

from aws_cdk import aws_dax as dax
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from stacks.config import PlatformConfig
from stacks.network import Network

DAX_TLS_PORT = 9111

# Item operations the DAX cluster forwards to DynamoDB with its own role. Transactions need no
# action of their own: DynamoDB authorises each action in them as the item operation it is.
DAX_TABLE_ACTIONS = [
    "dynamodb:DescribeTable",
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:Scan",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
]
# What the endpoint function may call on the cluster (the DAX client's data plane).
DAX_CLIENT_ACTIONS = [a.replace("dynamodb:", "dax:") for a in DAX_TABLE_ACTIONS if a != "dynamodb:DescribeTable"]


class DaxCache(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: PlatformConfig,
        network: Network,
        table: dynamodb.ITable,
    ) -> None:
        super().__init__(scope, construct_id)
        # X1: reachable only from the endpoint function's security group, only on the TLS port.
        self.security_group = ec2.SecurityGroup(
            self,
            "Sg",
            vpc=network.vpc,
            description="DAX: TLS (9111) from the endpoint function only",
            allow_all_outbound=False,
        )
        self.security_group.add_ingress_rule(
            network.function_sg, ec2.Port.tcp(DAX_TLS_PORT), "DAX TLS from the endpoint function"
        )
        network.function_sg.add_egress_rule(self.security_group, ec2.Port.tcp(DAX_TLS_PORT), "DAX TLS")

        # The role DAX assumes to reach DynamoDB: this table and its indexes, nothing else.
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("dax.amazonaws.com"),
            description="DAX cluster access to the session table",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=DAX_TABLE_ACTIONS,
                resources=[table.table_arn, f"{table.table_arn}/index/*"],
            )
        )

        subnet_ids = network.vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED).subnet_ids
        subnet_group = dax.CfnSubnetGroup(
            self, "SubnetGroup", subnet_ids=subnet_ids, description="mcp-platform DAX: private subnets"
        )
        # X2: item cache TTL (GetItem results) and query cache TTL (Query/Scan results).
        parameter_group = dax.CfnParameterGroup(
            self,
            "ParameterGroup",
            description="mcp-platform DAX cache TTLs",
            parameter_name_values={
                "record-ttl-millis": str(config.dax_item_ttl_seconds * 1000),
                "query-ttl-millis": str(config.dax_query_ttl_seconds * 1000),
            },
        )
        self.cluster = dax.CfnCluster(
            self,
            "Cluster",
            iam_role_arn=self.role.role_arn,
            node_type=config.dax_node_type,
            replication_factor=config.dax_nodes,
            cluster_endpoint_encryption_type="TLS",  # X1: daxs:// only
            sse_specification=dax.CfnCluster.SSESpecificationProperty(sse_enabled=True),  # X1 at rest
            security_group_ids=[self.security_group.security_group_id],
            subnet_group_name=subnet_group.ref,
            parameter_group_name=parameter_group.ref,
            description=f"mcp-platform {config.stage} session cache",
        )
        # The role's policy (not only the role, which the ARN reference already orders) must
        # exist before the cluster starts serving requests with it.
        policy = self.role.node.try_find_child("DefaultPolicy")
        if policy is not None:
            self.cluster.node.add_dependency(policy)

    @property
    def endpoint_url(self) -> str:
        """The discovery URL with its scheme (daxs:// for a TLS cluster), as DAX_ENDPOINT takes it."""
        return self.cluster.attr_cluster_discovery_endpoint_url

    def grant_client(self, grantee: iam.IGrantable) -> None:
        """Data-plane access to this cluster only (X3: reads and writes go through DAX)."""
        cluster_arn = self.cluster.attr_arn
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=DAX_CLIENT_ACTIONS, resources=[cluster_arn])
        )
