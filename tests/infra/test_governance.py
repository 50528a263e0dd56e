"""Rate limits (G1) and quotas (G2) in the template: nothing of them when off; with ``rate_limits``
the counters table, its variables and exactly the update admission makes, at the endpoint only;
with ``quotas`` the variable the endpoint and ingest read; and the keys' rules, checked at synth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_platform.config import EnvVars
from mcp_platform.ops.__main__ import OPERATIONS_OUTPUT
from stacks.config import ContextError, PlatformConfig
from tests.infra.iam import granted_logical_ids, referenced_logical_ids, role_statements
from tests.infra.synth import GOVERNED_CONTEXT, Synthesized, synthesize
from tests.infra.test_data import session_table
from tests.infra.test_functions import platform_functions

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

GOVERNANCE_VARIABLES = {EnvVars.RATE_LIMITS, EnvVars.QUOTAS, EnvVars.LIMITS_TABLE}
ENDPOINT, INGEST, AUDIT, WORKER = (
    "run.sh",
    "ingest_handler.lambda_handler",
    "audit_handler.lambda_handler",
    "task_worker.lambda_handler",
)
GOVERNED_RATE_LIMITS = '{"client":"600/minute","principal":"60/minute","tool:search":"10/minute"}'
GOVERNED_QUOTAS = '{"principal":"1000/day","principal:month":"20000/month"}'


def limits_table_ids(s: Synthesized) -> list[str]:
    return [k for k in s.resources("AWS::DynamoDB::Table") if k.startswith("GovernanceLimitsTable")]


def limits_table(s: Synthesized) -> tuple[str, dict[str, Any]]:
    (logical_id,) = limits_table_ids(s)
    return logical_id, s.json["Resources"][logical_id]


def functions_by_handler(s: Synthesized) -> dict[str, dict[str, Any]]:
    return {f["Properties"]["Handler"]: f for f in platform_functions(s).values()}


def variables(function: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = function["Properties"]["Environment"]["Variables"]
    return found


def actions_on(s: Synthesized, function: dict[str, Any], logical_id: str) -> set[str]:
    return {
        action
        for statement in role_statements(s, function)
        if logical_id in referenced_logical_ids(statement.get("Resource"))
        for action in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
    }


def operations_environment(s: Synthesized) -> dict[str, str]:
    """The output's JSON with each Ref replaced by the logical id it names."""
    value = s.json["Outputs"][OPERATIONS_OUTPUT]["Value"]
    parts = value["Fn::Join"][1] if isinstance(value, dict) else [value]
    text = "".join(part if isinstance(part, str) else part["Ref"] for part in parts)
    environment: dict[str, str] = json.loads(text)
    return environment


def test_g1_g2_off_by_default_no_table_no_variable_no_grant(default: Synthesized, alt: Synthesized) -> None:
    """Given neither rate_limits nor quotas (the default and the alternative configurations), then
    the template has no limits table, no function has a governance variable, and the operations
    output names neither (G1: off, no AWS call added)."""
    for s in (default, alt):
        assert limits_table_ids(s) == []
        assert "Governance" not in json.dumps(s.json)
        for function in platform_functions(s).values():
            assert not GOVERNANCE_VARIABLES & variables(function).keys()
        assert not GOVERNANCE_VARIABLES & operations_environment(s).keys()
        assert not s.stack.governance


def test_g1_the_counters_table_pk_and_ttl_on_demand_encrypted_no_stream_no_pitr(
    governed: Synthesized, rate_limited: Synthesized
) -> None:
    """Given rate_limits, then one table keyed by a string `pk` alone, expiring by `ttl`, on demand,
    encrypted with the platform key as the session table is, without a stream or point-in-time
    recovery (its counters live a window: a second to a day)."""
    for s in (governed, rate_limited):
        _, table = limits_table(s)
        props = table["Properties"]
        assert props["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
        assert props["AttributeDefinitions"] == [{"AttributeName": "pk", "AttributeType": "S"}]
        assert props["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
        assert props["BillingMode"] == "PAY_PER_REQUEST"
        session = session_table(s)
        assert props["SSESpecification"] == session["Properties"]["SSESpecification"]
        assert props["SSESpecification"]["SSEType"] == "KMS"
        assert props["SSESpecification"]["KMSMasterKeyId"]["Fn::GetAtt"][0].startswith("PlatformKey")
        assert "StreamSpecification" not in props
        assert not props.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled")
        # And it is removed and protected as the session table is, per stage
        assert (table["DeletionPolicy"], props["DeletionProtectionEnabled"]) == (
            session["DeletionPolicy"],
            session["Properties"]["DeletionProtectionEnabled"],
        )
    assert limits_table(governed)[1]["DeletionPolicy"] == "Delete"  # dev
    _, prod = limits_table(rate_limited)
    assert (prod["DeletionPolicy"], prod["Properties"]["DeletionProtectionEnabled"]) == ("Retain", True)


def test_g1_the_endpoint_gets_the_rules_and_the_table_and_may_only_update_its_counters(
    governed: Synthesized, rate_limited: Synthesized
) -> None:
    """Given rate_limits (as `-c` text, and as a cdk.json object), then the endpoint has them as
    canonical JSON and the table's name, and its role may call exactly dynamodb:UpdateItem on the
    table (a transaction of updates is authorized per update), with the platform key it encrypts with."""
    for s, rules in ((governed, GOVERNED_RATE_LIMITS), (rate_limited, '{"principal":"5/second"}')):
        table_id, table = limits_table(s)
        endpoint = functions_by_handler(s)[ENDPOINT]
        env = variables(endpoint)
        assert env[EnvVars.RATE_LIMITS] == rules
        assert env[EnvVars.LIMITS_TABLE] == {"Ref": table_id}
        assert actions_on(s, endpoint, table_id) == {"dynamodb:UpdateItem"}
        statements = [st for st in role_statements(s, endpoint) if table_id in referenced_logical_ids(st["Resource"])]
        assert [st["Resource"] for st in statements] == [{"Fn::GetAtt": [table_id, "Arn"]}]  # no index, no wildcard
        key_id = table["Properties"]["SSESpecification"]["KMSMasterKeyId"]["Fn::GetAtt"][0]
        assert {"kms:Decrypt", "kms:GenerateDataKey*"} <= actions_on(s, endpoint, key_id)


def test_g1_no_other_function_knows_the_counters(governed: Synthesized, rate_limited: Synthesized) -> None:
    """Given rate_limits, then ingest, audit and the task worker (a task was admitted by the
    endpoint) have neither the rules nor the table, and no grant on it."""
    for s in (governed, rate_limited):
        table_id, _ = limits_table(s)
        functions = functions_by_handler(s)
        assert set(functions) == {ENDPOINT, INGEST, AUDIT, WORKER}
        for handler in (INGEST, AUDIT, WORKER):
            assert not {EnvVars.RATE_LIMITS, EnvVars.LIMITS_TABLE} & variables(functions[handler]).keys(), handler
            assert table_id not in granted_logical_ids(s, functions[handler]), handler


def test_g2_quotas_reach_the_endpoint_and_ingest_only_when_set(
    governed: Synthesized, rate_limited: Synthesized
) -> None:
    """Given quotas (a cdk.json object), then the endpoint (it admits against them) and ingest (it
    keeps the period totals they read) have them as canonical JSON, audit and the worker do not;
    given rate limits alone, no function has them."""
    functions = functions_by_handler(governed)
    for handler in (ENDPOINT, INGEST):
        assert variables(functions[handler])[EnvVars.QUOTAS] == GOVERNED_QUOTAS, handler
    for handler in (AUDIT, WORKER):
        assert EnvVars.QUOTAS not in variables(functions[handler]), handler
    for function in platform_functions(rate_limited).values():
        assert EnvVars.QUOTAS not in variables(function)


def test_g2_quotas_alone_add_no_resource(tmp_path: Path) -> None:
    """Given quotas without rate limits, then there is no limits table and no limits variable: the
    quotas read the usage in the session table both functions already use."""
    s = synthesize(tmp_path, {"quotas": '{"principal": "100/day"}', "dax": "false", "tasks": "false"})
    assert limits_table_ids(s) == []
    functions = functions_by_handler(s)
    for handler in (ENDPOINT, INGEST):
        env = variables(functions[handler])
        assert env[EnvVars.QUOTAS] == '{"principal":"100/day"}'
        assert not {EnvVars.RATE_LIMITS, EnvVars.LIMITS_TABLE} & env.keys()
    assert operations_environment(s)[EnvVars.QUOTAS] == '{"principal":"100/day"}'


def test_the_operations_output_names_the_table_and_the_quotas(governed: Synthesized, rate_limited: Synthesized) -> None:
    """Given governance on, then the operator command finds the limits table and the quotas."""
    env = operations_environment(governed)
    assert env[EnvVars.LIMITS_TABLE] == limits_table(governed)[0]
    assert env[EnvVars.QUOTAS] == GOVERNED_QUOTAS
    env = operations_environment(rate_limited)
    assert env[EnvVars.LIMITS_TABLE] == limits_table(rate_limited)[0]
    assert EnvVars.QUOTAS not in env


def test_g1_with_dax_the_endpoint_reaches_the_table_through_the_dynamodb_gateway(governed: Synthesized) -> None:
    """Given rate_limits with dax=true (the endpoint in the VPC's isolated subnets), then the
    DynamoDB gateway endpoint serves the route tables of every subnet the endpoint runs in, and
    has no policy restricting it to other tables."""
    endpoint = functions_by_handler(governed)[ENDPOINT]
    subnets = {ref["Ref"] for ref in endpoint["Properties"]["VpcConfig"]["SubnetIds"]}
    route_tables = {
        a["Properties"]["RouteTableId"]["Ref"]
        for a in governed.resources("AWS::EC2::SubnetRouteTableAssociation").values()
        if a["Properties"]["SubnetId"]["Ref"] in subnets
    }
    (gateway,) = [
        e["Properties"]
        for e in governed.resources("AWS::EC2::VPCEndpoint").values()
        if e["Properties"]["VpcEndpointType"] == "Gateway"
    ]
    assert json.dumps(gateway["ServiceName"]).endswith('".dynamodb"]]}')
    assert route_tables and {ref["Ref"] for ref in gateway["RouteTableIds"]} == route_tables
    assert "PolicyDocument" not in gateway


def config_of(**context: Any) -> PlatformConfig:
    return PlatformConfig.from_context(context.get)


def test_g1_g2_both_forms_are_accepted_and_kept_as_canonical_json() -> None:
    """Given the same rules as a cdk.json object and as `-c` text (another order, spaces), then
    both give the same canonical text; unset, empty text or an empty object: off."""
    as_object = config_of(rate_limits={"tool:search": "10/minute", "principal": "60/minute"})
    as_text = config_of(rate_limits=' { "principal" : "60/minute",  "tool:search": "10/minute" } ')
    assert as_object.rate_limits == as_text.rate_limits == '{"principal":"60/minute","tool:search":"10/minute"}'
    assert config_of(quotas='{"principal": "5/month"}').quotas == '{"principal":"5/month"}'
    for off in (None, "", "{}", {}):
        config = config_of(rate_limits=off, quotas=off)
        assert (config.rate_limits, config.quotas) == (None, None)
    assert config_of(**GOVERNED_CONTEXT).rate_limits == GOVERNED_RATE_LIMITS


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"rate_limits": {"tool:search": "10/fortnight"}},
            "rate_limits: rule 'tool:search' must be \"<N>/<second|minute|hour|day>\", got '10/fortnight'",
        ),
        ({"rate_limits": '{"principal": "60/minute", "everyone": "5/second"}'}, "rate_limits: unknown rule 'everyone'"),
        ({"rate_limits": {"principal": "0/minute"}}, "rate_limits: rule 'principal' must allow between 1 and"),
        ({"rate_limits": {"principal": 60}}, "rate_limits: rule 'principal' must be"),
        ({"rate_limits": "principal=60/minute"}, "rate_limits must be a JSON object"),
        ({"rate_limits": '["principal", "60/minute"]'}, "rate_limits must be a JSON object"),
        ({"quotas": {"principal": "100/minute"}}, "quotas: rule 'principal' must be \"<N>/<day|month>\""),
        ({"quotas": {"client": "100/day"}}, "quotas: unknown quota 'client'"),
        (
            {"rate_limits": {"register": "10/hour"}},
            "rate_limits: rule 'register' limits the OAuth facade, which is not",
        ),
    ],
)
def test_g1_g2_a_bad_rule_fails_synth_naming_it(context: dict[str, Any], message: str, tmp_path: Path) -> None:
    """Given a rule the endpoint could not enforce, when synthesized, then synth stops before any
    construct with the key and the rule named."""
    with pytest.raises(ContextError) as raised:
        synthesize(tmp_path, context)
    assert message in str(raised.value)
