"""Network (X1's VPC, endpoints, flow log) and the event stream (K5-K9) in the template."""

from __future__ import annotations

import json

import pytest

from stacks.stream import INGEST_CONSUMER_NAME, SHARD_LEVEL_METRICS
from tests.infra.iam import granted_services
from tests.infra.synth import Synthesized

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def service_of(endpoint: dict) -> str:
    return endpoint["Properties"]["ServiceName"]["Fn::Join"][1][-1].lstrip(".")


def test_x1_vpc_two_azs_isolated_subnets_no_nat(default: Synthesized) -> None:
    # Given dax=true / Then one VPC with two private subnets and no way to the internet
    assert len(default.resources("AWS::EC2::VPC")) == 1
    subnets = default.resources("AWS::EC2::Subnet").values()
    assert len(subnets) == 2
    assert len({json.dumps(s["Properties"]["AvailabilityZone"]) for s in subnets}) == 2
    for resource_type in ("AWS::EC2::NatGateway", "AWS::EC2::InternetGateway", "AWS::EC2::EIP"):
        assert default.resources(resource_type) == {}, resource_type


def test_vpc_endpoints_the_endpoint_function_needs(default: Synthesized) -> None:
    # Then DynamoDB is a gateway endpoint; Kinesis, SQS, Secrets Manager, X-Ray private interface ones
    endpoints = default.resources("AWS::EC2::VPCEndpoint").values()
    by_service = {service_of(e): e["Properties"] for e in endpoints}
    assert by_service["dynamodb"]["VpcEndpointType"] == "Gateway"
    for service in ("kinesis-streams", "sqs", "secretsmanager", "xray"):
        props = by_service[service]
        assert props["VpcEndpointType"] == "Interface" and props["PrivateDnsEnabled"] is True
        assert props["SecurityGroupIds"]


def test_interface_endpoints_accept_https_from_the_function_only(default: Synthesized) -> None:
    # Given the interface endpoints' security group / Then only 443 from the function's group
    sg_ids = {
        e["Properties"]["SecurityGroupIds"][0]["Fn::GetAtt"][0]
        for e in default.resources("AWS::EC2::VPCEndpoint").values()
        if e["Properties"]["VpcEndpointType"] == "Interface"
    }
    (sg_id,) = sg_ids
    rules = [
        r["Properties"]
        for r in default.resources("AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"]["GroupId"] == {"Fn::GetAtt": [sg_id, "GroupId"]}
    ] + default.json["Resources"][sg_id]["Properties"].get("SecurityGroupIngress", [])
    assert [(r["FromPort"], r["ToPort"], "SourceSecurityGroupId" in r) for r in rules] == [(443, 443, True)]


def test_vpc_flow_log(default: Synthesized) -> None:
    flow_log = default.one("AWS::EC2::FlowLog")["Properties"]
    assert flow_log["ResourceType"] == "VPC" and flow_log["LogDestinationType"] == "cloud-watch-logs"


def test_k6_on_demand_by_default_and_provisioned_from_sizing(default: Synthesized, alt: Synthesized) -> None:
    # Given the default: ON_DEMAND without a shard count
    props = default.one("AWS::Kinesis::Stream")["Properties"]
    assert props["StreamModeDetails"] == {"StreamMode": "ON_DEMAND"}
    assert "ShardCount" not in props
    # Given alt: PROVISIONED sized from 5000 records/s x 2048 B -> ceil(10.24 / 0.85) = 13
    props = alt.one("AWS::Kinesis::Stream")["Properties"]
    assert props["StreamModeDetails"] == {"StreamMode": "PROVISIONED"}
    assert props["ShardCount"] == 13


def test_k7_retention_168_hours_default_configurable(default: Synthesized, alt: Synthesized) -> None:
    assert default.one("AWS::Kinesis::Stream")["Properties"]["RetentionPeriodHours"] == 168
    assert alt.one("AWS::Kinesis::Stream")["Properties"]["RetentionPeriodHours"] == 720


def test_k9_stream_encrypted_with_kms(variant: Synthesized) -> None:
    encryption = variant.one("AWS::Kinesis::Stream")["Properties"]["StreamEncryption"]
    assert encryption["EncryptionType"] == "KMS"
    key_id = encryption["KeyId"]["Fn::GetAtt"][0]
    assert variant.json["Resources"][key_id]["Properties"]["EnableKeyRotation"] is True


def test_k5_ingest_reads_through_the_efo_consumer(variant: Synthesized) -> None:
    # Given the registered consumer / Then the ingest mapping's source is the consumer, not the stream
    consumers = variant.resources("AWS::Kinesis::StreamConsumer")
    ((consumer_id, consumer),) = consumers.items()
    assert consumer["Properties"]["ConsumerName"] == INGEST_CONSUMER_NAME
    kinesis_mappings = [
        m["Properties"]
        for m in variant.resources("AWS::Lambda::EventSourceMapping").values()
        if "ConsumerARN" in json.dumps(m["Properties"]["EventSourceArn"])
    ]
    assert [m["EventSourceArn"] for m in kinesis_mappings] == [{"Fn::GetAtt": [consumer_id, "ConsumerARN"]}]


def test_k8_shard_level_monitoring_via_aws_custom_resource(variant: Synthesized) -> None:
    # Then EnableEnhancedMonitoring runs on create and update with every K8 metric
    resource = variant.one("Custom::AWS")["Properties"]
    for phase, action in (("Create", "enable"), ("Update", "enable"), ("Delete", "disable")):
        call = "".join(p if isinstance(p, str) else "<ref>" for p in resource[phase]["Fn::Join"][1])
        assert f'"action":"{action}EnhancedMonitoring"' in call
        if action == "enable":
            assert json.dumps(SHARD_LEVEL_METRICS, separators=(",", ":")) in call
    assert set(SHARD_LEVEL_METRICS) >= {"IncomingBytes", "IncomingRecords", "IteratorAgeMilliseconds"}
    # And its permissions name the stream only
    stream_id = next(iter(variant.resources("AWS::Kinesis::Stream")))
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in variant.resources("AWS::IAM::Policy").values()
        if any("EnhancedMonitoring" in str(s["Action"]) for s in p["Properties"]["PolicyDocument"]["Statement"])
    ]
    assert policies == [
        [
            {
                "Action": ["kinesis:DisableEnhancedMonitoring", "kinesis:EnableEnhancedMonitoring"],
                "Effect": "Allow",
                "Resource": {"Fn::GetAtt": [stream_id, "Arn"]},
            }
        ]
    ]


# Services a VPC-attached function is granted that it never calls from inside the VPC itself, with
# why; every other granted service must have a VPC endpoint, or the first call hangs to the timeout.
REACHED_WITHOUT_AN_ENDPOINT = {
    "logs": "Lambda ships the function's stdout itself",
    "ec2": "Lambda's service creates the function's network interfaces (AWSLambdaVPCAccessExecutionRole)",
    "kms": "SQS, Kinesis and Secrets Manager call KMS on the function's behalf; the function never does",
    "dax": "the DAX cluster is in the VPC: reached through its security group (test_data.py, X1)",
}


def test_every_service_a_vpc_function_is_granted_has_a_vpc_endpoint(default: Synthesized) -> None:
    # Given dax=true: the endpoint and the task worker are in the isolated subnets, without NAT
    endpoints = {service_of(e) for e in default.resources("AWS::EC2::VPCEndpoint").values()}
    in_vpc = {k: f for k, f in default.resources("AWS::Lambda::Function").items() if "VpcConfig" in f["Properties"]}
    assert {f["Properties"]["Handler"] for f in in_vpc.values()} == {"run.sh", "task_worker.lambda_handler"}
    for logical_id, function in in_vpc.items():
        # When the services each one is granted are derived from its role
        needed = granted_services(default, function) - REACHED_WITHOUT_AN_ENDPOINT.keys()
        assert {"dynamodb", "kinesis", "sqs", "xray"} <= needed, logical_id
        # Then each has an endpoint (Kinesis's is named kinesis-streams)
        missing = {
            service for service in needed if {"kinesis": "kinesis-streams"}.get(service, service) not in endpoints
        }
        assert not missing, f"{logical_id} is granted {sorted(missing)} but the VPC has no endpoint for it"


def test_the_endpoint_reaches_secrets_manager_for_request_state_keys(default: Synthesized) -> None:
    # Then the endpoint, granted the request-state secret, has a private route to Secrets Manager
    endpoint = next(
        f for f in default.resources("AWS::Lambda::Function").values() if f["Properties"]["Handler"] == "run.sh"
    )
    assert "secretsmanager" in granted_services(default, endpoint)
    (props,) = [
        e["Properties"]
        for e in default.resources("AWS::EC2::VPCEndpoint").values()
        if service_of(e) == "secretsmanager"
    ]
    assert props["VpcEndpointType"] == "Interface" and props["PrivateDnsEnabled"] is True
