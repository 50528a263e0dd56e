"""Network: the private VPC that DAX and the VPC-attached endpoint function live in.

Only built when DAX is on (X1): without DAX the endpoint runs outside any VPC and reaches
DynamoDB, Kinesis and SQS over the public AWS endpoints, so no VPC (and none of its cost).
"""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from stacks.common import log_retention, removal_policy
from stacks.config import PlatformConfig


class Network(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: PlatformConfig) -> None:
        super().__init__(scope, construct_id)
        # Private isolated subnets only: nothing here needs the internet, so no NAT gateway
        # (its hourly charge and its egress path) exists at all.
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="private", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=24)
            ],
        )
        self.private_subnets = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)

        flow_log_group = logs.LogGroup(
            self,
            "FlowLogGroup",
            retention=log_retention(config),
            removal_policy=removal_policy(config),
        )
        self.vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_log_group),
            traffic_type=ec2.FlowLogTrafficType.REJECT,  # rejected traffic is what finds SG mistakes
        )

        # Gateway endpoint: free, and keeps DynamoDB traffic (direct or consistent reads) in AWS.
        self.vpc.add_gateway_endpoint(
            "DynamoDbEndpoint",
            service=ec2.GatewayVpcEndpointAwsService.DYNAMODB,
            subnets=[self.private_subnets],
        )

        # The function security group is created here so the endpoint and DAX security groups
        # can name it as their only allowed source.
        self.function_sg = ec2.SecurityGroup(
            self,
            "EndpointFunctionSg",
            vpc=self.vpc,
            description="endpoint function: egress to DAX (9111) and the interface endpoints (443)",
            allow_all_outbound=False,
        )
        self.endpoint_sg = ec2.SecurityGroup(
            self,
            "InterfaceEndpointSg",
            vpc=self.vpc,
            description="interface endpoints: HTTPS from the endpoint function only",
            allow_all_outbound=False,
        )
        self.endpoint_sg.add_ingress_rule(self.function_sg, ec2.Port.tcp(443), "HTTPS from the endpoint function")
        self.function_sg.add_egress_rule(self.endpoint_sg, ec2.Port.tcp(443), "HTTPS to the interface endpoints")
        # DynamoDB is reached through the gateway endpoint, whose prefix-list id would need an
        # account lookup at synth. The subnets are isolated (no route to the internet), so HTTPS
        # "anywhere" reaches only the gateway endpoint's DynamoDB routes and the VPC itself.
        self.function_sg.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to DynamoDB")

        # Interface endpoints for every service the in-VPC functions (endpoint, task worker) call:
        # Kinesis (PutRecords, the session's shard reads), SQS (producer DLQ, task queue), Secrets
        # Manager (the request-state keys of interactive calls) and X-Ray (Lambda tracing). Logs and
        # metrics need none: Lambda ships stdout itself and metrics travel in the logs (EMF).
        # tests/infra/test_network_stream.py derives the services from the functions' grants.
        for name, service in (
            ("KinesisEndpoint", ec2.InterfaceVpcEndpointAwsService.KINESIS_STREAMS),
            ("SqsEndpoint", ec2.InterfaceVpcEndpointAwsService.SQS),
            ("SecretsManagerEndpoint", ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER),
            ("XRayEndpoint", ec2.InterfaceVpcEndpointAwsService.XRAY),
        ):
            self.vpc.add_interface_endpoint(
                name,
                service=service,
                subnets=self.private_subnets,
                security_groups=[self.endpoint_sg],
                private_dns_enabled=True,
                open=False,
            )

    def function_placement(self) -> dict[str, object]:
        """Where a function that talks to DAX runs: the private subnets, behind the function SG."""
        return {"vpc": self.vpc, "vpc_subnets": self.private_subnets, "security_groups": [self.function_sg]}
