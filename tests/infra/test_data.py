"""Session table (D1, D5, D8, D9, D11), audit table (A3) and DAX (X1, X2) in the template."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import Stack
from aws_cdk.assertions import Match, Template

from mcp_platform.adapters.dynamodb import table_schema as schema
from mcp_platform.config import EnvVars
from stacks.common import platform_key
from stacks.config import PlatformConfig
from stacks.data import Data
from stacks.dax import DaxCache
from stacks.network import Network
from tests.infra.iam import role_statements
from tests.infra.synth import Synthesized

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def session_table(s: Synthesized) -> dict:
    return next(t for t in s.resources("AWS::DynamoDB::Table").values() if "StreamSpecification" in t["Properties"])


def audit_table(s: Synthesized) -> dict:
    return next(t for t in s.resources("AWS::DynamoDB::Table").values() if "StreamSpecification" not in t["Properties"])


def test_d1_d5_session_table_keys_and_ttl_attribute(default: Synthesized) -> None:
    # Given the default template / Then the table has string pk/sk and TTL on `ttl` (epoch seconds)
    props = session_table(default)["Properties"]
    assert props["KeySchema"] == [
        {"AttributeName": schema.PK, "KeyType": "HASH"},
        {"AttributeName": schema.SK, "KeyType": "RANGE"},
    ]
    types = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    assert types[schema.PK] == types[schema.SK] == "S"
    assert props["TimeToLiveSpecification"] == {"AttributeName": schema.TTL, "Enabled": True}
    assert props["BillingMode"] == "PAY_PER_REQUEST"


def test_d8_status_ttl_index(default: Synthesized) -> None:
    # Then the GSI is partitioned by status and sorted by the numeric ttl
    props = session_table(default)["Properties"]
    (index,) = props["GlobalSecondaryIndexes"]
    assert index["IndexName"] == schema.STATUS_TTL_INDEX == "status-ttl-index"
    assert index["KeySchema"] == [
        {"AttributeName": schema.STATUS, "KeyType": "HASH"},
        {"AttributeName": schema.TTL, "KeyType": "RANGE"},
    ]
    types = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    assert (types[schema.STATUS], types[schema.TTL]) == ("S", "N")


def test_d9_stream_new_and_old_images(default: Synthesized) -> None:
    assert session_table(default)["Properties"]["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}


def test_d11_pitr_everywhere_and_deletion_protection_outside_dev(default: Synthesized, alt: Synthesized) -> None:
    # Given the dev (default) and prod (alt) stages
    for s in (default, alt):
        for table in s.resources("AWS::DynamoDB::Table").values():
            spec = table["Properties"]["PointInTimeRecoverySpecification"]
            assert spec["PointInTimeRecoveryEnabled"] is True
    # Then deletion protection and retention follow the stage
    for table in default.resources("AWS::DynamoDB::Table").values():
        assert table["Properties"].get("DeletionProtectionEnabled", False) is False
        assert table["DeletionPolicy"] == "Delete"
    for table in alt.resources("AWS::DynamoDB::Table").values():
        assert table["Properties"]["DeletionProtectionEnabled"] is True
        assert table["DeletionPolicy"] == "Retain"


def test_a3_separate_audit_table_without_stream(variant: Synthesized) -> None:
    # Then the audit table has its own keys and TTL and emits no stream (it is never audited)
    props = audit_table(variant)["Properties"]
    assert [k["AttributeName"] for k in props["KeySchema"]] == [schema.AUDIT_PK, schema.AUDIT_SK]
    assert props["TimeToLiveSpecification"] == {"AttributeName": schema.AUDIT_TTL, "Enabled": True}


def test_x1_dax_cluster_tls_sse_private_subnets(default: Synthesized) -> None:
    # Then the cluster only speaks TLS (daxs://, 9111), is encrypted at rest, in the VPC's subnets
    default.template.has_resource_properties(
        "AWS::DAX::Cluster",
        {"ClusterEndpointEncryptionType": "TLS", "SSESpecification": {"SSEEnabled": True}},
    )
    subnet_group = default.one("AWS::DAX::SubnetGroup")["Properties"]
    subnets = default.resources("AWS::EC2::Subnet")
    assert sorted(ref["Ref"] for ref in subnet_group["SubnetIds"]) == sorted(subnets)
    for subnet in subnets.values():
        assert subnet["Properties"]["MapPublicIpOnLaunch"] is False


def test_x1_dax_reachable_only_from_endpoint_function_on_9111(default: Synthesized) -> None:
    # Given the DAX security group
    cluster = default.one("AWS::DAX::Cluster")["Properties"]
    (dax_sg,) = [g["Fn::GetAtt"][0] for g in cluster["SecurityGroupIds"]]
    endpoint_fn = next(
        f for f in default.resources("AWS::Lambda::Function").values() if f["Properties"].get("Handler") == "run.sh"
    )
    (fn_sg,) = [g["Fn::GetAtt"][0] for g in endpoint_fn["Properties"]["VpcConfig"]["SecurityGroupIds"]]
    # Then its only ingress is TCP 9111 from the endpoint function's security group
    inline = default.json["Resources"][dax_sg]["Properties"].get("SecurityGroupIngress", [])
    separate = [
        r["Properties"]
        for r in default.resources("AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"]["GroupId"] == {"Fn::GetAtt": [dax_sg, "GroupId"]}
    ]
    rules = inline + separate
    assert len(rules) == 1
    (rule,) = rules
    assert (rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) == ("tcp", 9111, 9111)
    assert rule["SourceSecurityGroupId"] == {"Fn::GetAtt": [fn_sg, "GroupId"]}
    assert "CidrIp" not in rule


def test_x1_dax_role_scoped_to_the_session_table(default: Synthesized) -> None:
    # Then the role DAX assumes may act on the session table and its indexes only
    role_id = default.one("AWS::DAX::Cluster")["Properties"]["IAMRoleARN"]["Fn::GetAtt"][0]
    role = default.json["Resources"][role_id]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "dax.amazonaws.com"}
    policies = [
        p for p in default.resources("AWS::IAM::Policy").values() if {"Ref": role_id} in p["Properties"]["Roles"]
    ]
    table_id = next(
        k for k, v in default.resources("AWS::DynamoDB::Table").items() if "StreamSpecification" in v["Properties"]
    )
    table_arn = {"Fn::GetAtt": [table_id, "Arn"]}
    allowed = [table_arn, {"Fn::Join": ["", [table_arn, "/index/*"]]}]
    statements = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]
    assert statements
    for statement in statements:
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        assert all(resource in allowed for resource in resources), resources
        assert all(action.startswith("dynamodb:") for action in statement["Action"])


def test_x2_parameter_group_default_ttls(default: Synthesized) -> None:
    default.template.has_resource_properties(
        "AWS::DAX::ParameterGroup",
        {"ParameterNameValues": {"record-ttl-millis": "300000", "query-ttl-millis": "60000"}},
    )


def test_x2_cache_ttls_are_configurable() -> None:
    # Given DAX with non-default TTLs, built on its own (no functions, no assets)
    config = PlatformConfig.from_context({"dax_item_ttl_seconds": 120, "dax_query_ttl_seconds": "30"}.get)
    stack = Stack()
    data = Data(stack, "Data", config=config, key=platform_key(stack, "Key", config))
    DaxCache(stack, "Dax", config=config, network=Network(stack, "Net", config=config), table=data.session_table)
    # Then the parameter group carries them in milliseconds
    Template.from_stack(stack).has_resource_properties(
        "AWS::DAX::ParameterGroup",
        {"ParameterNameValues": Match.object_equals({"record-ttl-millis": "120000", "query-ttl-millis": "30000"})},
    )


def test_x5_dax_false_builds_no_dax_and_no_vpc(alt: Synthesized) -> None:
    # Given dax=false / Then no cluster, no VPC, and the endpoint gets an empty DAX_ENDPOINT
    for resource_type in ("AWS::DAX::Cluster", "AWS::EC2::VPC", "AWS::EC2::SecurityGroup", "AWS::EC2::VPCEndpoint"):
        assert alt.resources(resource_type) == {}, resource_type
    for fn in alt.resources("AWS::Lambda::Function").values():
        assert "VpcConfig" not in fn["Properties"]


def test_test_support_session_table_matches_the_template(default: Synthesized) -> None:
    """Tests create their tables from tests/support/tables.py: it must declare what the
    template declares (keys, attribute types, GSI and projection, stream), or tests would
    exercise a table that is never deployed."""
    from tests.support.tables import session_table_definition

    props = session_table(default)["Properties"]
    ours = session_table_definition("t")
    assert_same_keys_and_index(ours, props)
    assert ours["StreamSpecification"]["StreamViewType"] == props["StreamSpecification"]["StreamViewType"]


def test_test_support_audit_table_matches_the_template(default: Synthesized) -> None:
    """The audit table the tests create (tests/support/tables.py) is the one deployed: keys,
    attribute types, the tenant index and its projection."""
    from tests.support.tables import audit_table_definition

    assert_same_keys_and_index(audit_table_definition("t"), audit_table(default)["Properties"])


def assert_same_keys_and_index(ours: dict[str, Any], props: dict[str, Any]) -> None:
    """A CreateTable definition of the tests declares the template table's keys, attribute types,
    and its one index (name, keys, projection)."""
    assert ours["KeySchema"] == props["KeySchema"]
    assert sorted(ours["AttributeDefinitions"], key=str) == sorted(props["AttributeDefinitions"], key=str)
    (template_index,) = props["GlobalSecondaryIndexes"]
    (our_index,) = ours["GlobalSecondaryIndexes"]
    assert our_index["IndexName"] == template_index["IndexName"]
    assert our_index["KeySchema"] == template_index["KeySchema"]
    assert our_index["Projection"]["ProjectionType"] == template_index["Projection"]["ProjectionType"]
    assert sorted(our_index["Projection"].get("NonKeyAttributes", [])) == sorted(
        template_index["Projection"].get("NonKeyAttributes", [])
    )


def test_x6_every_writer_of_session_metadata_writes_through_dax(default: Synthesized) -> None:
    # Given dax=true: the endpoint and the task worker write session metadata items (ingest only
    # ConditionChecks them and audit deletes what an expired session held: sessions/store.py)
    functions = default.resources("AWS::Lambda::Function").values()
    writers = [f for f in functions if f["Properties"].get("Handler") in ("run.sh", "task_worker.lambda_handler")]
    assert len(writers) == 2
    for function in writers:
        # Then each is told the cluster's endpoint and may use it (dax:* on the cluster)
        assert "Fn::GetAtt" in json.dumps(function["Properties"]["Environment"]["Variables"][EnvVars.DAX_ENDPOINT])
        actions = {
            action
            for statement in role_statements(default, function)
            for action in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
        }
        # (a transaction through DAX is authorized per item: Put, Update, Delete, ConditionCheckItem)
        assert {"dax:GetItem", "dax:PutItem", "dax:UpdateItem", "dax:ConditionCheckItem"} <= actions, actions
