"""Deployments (stacks/deployment.py): every function published as a version behind the alias
``live``; the Function URL, the stream mappings and the task queue's trigger invoke that alias; one
CodeDeploy deployment group per alias shifts it as the ``deployment`` context key says (all at once
in dev stages, a 10% canary for 5 minutes elsewhere, any canary or linear shift named) and rolls
back on the endpoint's error-rate and p99 alarms, every DLQ's alarm and the function's own errors."""

from __future__ import annotations

from typing import Any

import pytest

from stacks.config import ContextError, PlatformConfig
from stacks.deployment import LIVE_ALIAS, DeploymentStrategy
from tests.infra.synth import Synthesized

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]
ROLLBACK_EVENTS = {"DEPLOYMENT_FAILURE", "DEPLOYMENT_STOP_ON_REQUEST", "DEPLOYMENT_STOP_ON_ALARM"}


def logical_id(synthesized: Synthesized, construct: Any) -> str:
    stack = synthesized.stack
    return str(stack.resolve(stack.get_logical_id(construct.node.default_child)))


def python_functions(synthesized: Synthesized) -> set[str]:
    return {
        function_id
        for function_id, function in synthesized.resources("AWS::Lambda::Function").items()
        if str(function["Properties"].get("Runtime", "")).startswith("python")
    }


def aliases_by_function(synthesized: Synthesized) -> dict[str, tuple[str, dict[str, Any]]]:
    found = {}
    for alias_id, alias in synthesized.resources("AWS::Lambda::Alias").items():
        function_id = alias["Properties"]["FunctionName"]["Ref"]
        assert function_id not in found, f"{function_id} has two aliases"
        found[function_id] = (alias_id, alias)
    return found


def test_every_function_is_published_behind_its_live_alias(variant: Synthesized) -> None:
    """Each of the platform's functions has one alias, ``live``, on the version published from its
    current configuration, and nothing else: no other alias, no unpublished target."""
    aliases = aliases_by_function(variant)
    assert set(aliases) == python_functions(variant)
    versions = variant.resources("AWS::Lambda::Version")
    for function_id, (_, alias) in aliases.items():
        assert alias["Properties"]["Name"] == LIVE_ALIAS
        version_id = alias["Properties"]["FunctionVersion"]["Fn::GetAtt"][0]
        assert versions[version_id]["Properties"]["FunctionName"] == {"Ref": function_id}


def test_the_function_url_and_every_mapping_invoke_the_alias(variant: Synthesized) -> None:
    """The Function URL is the alias's (qualifier ``live``), its invoke permissions name the alias
    (with edge=api_gateway, the API's integration and permission instead),
    and every event source mapping (the Kinesis consumer's, the table stream's, the task queue's)
    invokes its function's alias: nothing invokes a function's unqualified $LATEST."""
    alias_id = logical_id(variant, variant.stack.endpoint.alias)
    if variant.stack.config.edge == "api_gateway":
        # No URL: API Gateway's streamed integration, and its permission, name the alias
        assert not variant.resources("AWS::Lambda::Url")
        api_permissions = [
            p["Properties"]
            for p in variant.resources("AWS::Lambda::Permission").values()
            if p["Properties"]["Principal"] == "apigateway.amazonaws.com"
        ]
        assert api_permissions and all(p["FunctionName"] == {"Ref": alias_id} for p in api_permissions)
        for method in variant.resources("AWS::ApiGateway::Method").values():
            assert {"Ref": alias_id} in method["Properties"]["Integration"]["Uri"]["Fn::Join"][1]
    else:
        (url,) = variant.resources("AWS::Lambda::Url").values()
        endpoint_id = logical_id(variant, variant.stack.endpoint.function)
        assert url["Properties"]["TargetFunctionArn"] == {"Fn::GetAtt": [endpoint_id, "Arn"]}
        assert url["Properties"]["Qualifier"] == LIVE_ALIAS
        url_permissions = [
            p["Properties"]
            for p in variant.resources("AWS::Lambda::Permission").values()
            if p["Properties"].get("FunctionUrlAuthType") or p["Properties"].get("InvokedViaFunctionUrl")
        ]
        assert url_permissions and all(p["FunctionName"] == {"Ref": alias_id} for p in url_permissions)
    mappings = variant.resources("AWS::Lambda::EventSourceMapping").values()
    invoked = [variant.invoked(mapping["Properties"]["FunctionName"]) for mapping in mappings]
    expected = {variant.stack.processing.ingest, variant.stack.processing.audit}
    if variant.stack.tasks is not None:
        expected.add(variant.stack.tasks.function)
    assert sorted(invoked) == sorted((logical_id(variant, fn), LIVE_ALIAS) for fn in expected)


def test_the_endpoint_exposes_the_alias_an_edge_must_target(default: Synthesized) -> None:
    """The endpoint construct's ``alias`` is what its URL serves: a CDN or API in front of the URL
    is configured from the endpoint's alias and URL, never from its function."""
    endpoint = default.stack.endpoint
    assert endpoint.alias.alias_name == LIVE_ALIAS
    assert endpoint.alias.version.lambda_ is endpoint.function
    output = default.json["Outputs"]["McpEndpointUrl"]["Value"]["Fn::Join"][1][0]
    url_id = logical_id(default, endpoint.url)
    assert output == {"Fn::GetAtt": [url_id, "FunctionUrl"]}


def groups(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    """Deployment groups by the function whose alias they shift."""
    found = {}
    for alias_id, alias in synthesized.resources("AWS::Lambda::Alias").items():
        update = alias["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]
        group_id = update["DeploymentGroupName"]["Ref"]
        group = synthesized.json["Resources"][group_id]
        assert update["ApplicationName"] == group["Properties"]["ApplicationName"], alias_id
        found[alias["Properties"]["FunctionName"]["Ref"]] = group["Properties"]
    return found


@pytest.mark.parametrize(
    ("fixture", "config_name"),
    [("default", "CodeDeployDefault.LambdaAllAtOnce"), ("alt", "CodeDeployDefault.LambdaCanary10Percent5Minutes")],
)
def test_each_alias_is_shifted_by_codedeploy_as_the_stage_defaults(
    fixture: str, config_name: str, request: pytest.FixtureRequest
) -> None:
    """dev: all at once; prod: the 10% canary for 5 minutes; one group per alias, in one application,
    each rolling back on a failure, a stop, or an alarm."""
    synthesized: Synthesized = request.getfixturevalue(fixture)
    by_function = groups(synthesized)
    assert set(by_function) == python_functions(synthesized)
    assert len(synthesized.resources("AWS::CodeDeploy::Application")) == 1
    assert len(synthesized.resources("AWS::CodeDeploy::DeploymentGroup")) == len(by_function)
    for group in by_function.values():
        assert group["DeploymentConfigName"] == config_name
        assert group["DeploymentStyle"] == {"DeploymentOption": "WITH_TRAFFIC_CONTROL", "DeploymentType": "BLUE_GREEN"}
        assert group["AutoRollbackConfiguration"]["Enabled"] is True
        assert set(group["AutoRollbackConfiguration"]["Events"]) == ROLLBACK_EVENTS


def test_every_group_rolls_back_on_the_endpoints_alarms_every_dlq_and_its_own_errors(variant: Synthesized) -> None:
    monitoring = variant.stack.monitoring
    shared = {logical_id(variant, alarm) for alarm in (*monitoring.endpoint_alarms, *monitoring.dlq_alarms)}
    assert [alarm.node.id for alarm in monitoring.endpoint_alarms] == ["EndpointErrorRate", "EndpointP99"]
    dlqs = len(variant.stack.dlqs) + (1 if variant.stack.tasks is not None else 0)
    assert len(shared) == 2 + dlqs
    functions = {
        "Endpoint": variant.stack.endpoint.function,
        "Ingest": variant.stack.processing.ingest,
        "Audit": variant.stack.processing.audit,
        **({"TaskWorker": variant.stack.tasks.function} if variant.stack.tasks is not None else {}),
    }
    by_function = groups(variant)
    for name, function in functions.items():
        group = by_function[logical_id(variant, function)]
        assert group["AlarmConfiguration"]["Enabled"] is True
        watched = {alarm["Name"]["Ref"] for alarm in group["AlarmConfiguration"]["Alarms"]}
        own = logical_id(variant, monitoring.error_alarms[name])
        assert watched == shared | {own}, name
        # The alarm watched is the one on the function's errors metric.
        alarm = variant.json["Resources"][own]["Properties"]
        assert alarm["MetricName"] == "Errors"
        assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": logical_id(variant, function)}}]


def test_a_named_shift_gets_its_own_config_and_provisioned_environments_their_alias(shifted: Synthesized) -> None:
    """``linear20_every3min`` is no predefined configuration: the stack declares it; and the
    endpoint's alias keeps the provisioned environments (no other alias has any)."""
    (config_id, config), *more = shifted.resources("AWS::CodeDeploy::DeploymentConfig").items()
    assert not more
    assert config["Properties"]["ComputePlatform"] == "Lambda"
    assert config["Properties"]["TrafficRoutingConfig"] == {
        "Type": "TimeBasedLinear",
        "TimeBasedLinear": {"LinearInterval": 3, "LinearPercentage": 20},
    }
    by_function = groups(shifted)
    assert len(by_function) == 3  # no task worker here
    assert all(group["DeploymentConfigName"] == {"Ref": config_id} for group in by_function.values())
    endpoint_id = logical_id(shifted, shifted.stack.endpoint.function)
    for function_id, (_, alias) in aliases_by_function(shifted).items():
        provisioned = alias["Properties"].get("ProvisionedConcurrencyConfig")
        if function_id == endpoint_id:
            assert provisioned == {"ProvisionedConcurrentExecutions": 2}
        else:
            assert provisioned is None
    endpoint = shifted.json["Resources"][endpoint_id]["Properties"]
    assert endpoint["ReservedConcurrentExecutions"] == 50


def test_no_provisioned_environments_unless_asked(variant: Synthesized) -> None:
    aliases = variant.resources("AWS::Lambda::Alias").values()
    assert all("ProvisionedConcurrencyConfig" not in alias["Properties"] for alias in aliases)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("all_at_once", DeploymentStrategy("all_at_once")),
        ("canary10_5min", DeploymentStrategy("canary", 10, 5)),
        ("Canary25_30min", DeploymentStrategy("canary", 25, 30)),
        ("linear10_every1min", DeploymentStrategy("linear", 10, 1)),
        (" linear50_every2880min ", DeploymentStrategy("linear", 50, 2880)),
    ],
)
def test_the_spellings_parse_and_spell_back(value: str, expected: DeploymentStrategy) -> None:
    parsed = PlatformConfig.from_context({"deployment": value}.get).deployment
    assert parsed == expected
    assert DeploymentStrategy.parse(parsed.spelling) == parsed


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("blue_green", "must be all_at_once, canary<P>_<M>min"),
        ("canary10", "must be all_at_once, canary<P>_<M>min"),
        ("canary0_5min", "a canary step of 1-99 percent"),
        ("canary100_5min", "must be all_at_once"),  # three digits: no spelling
        ("linear10_every0min", "a linear interval of 1-2880 minutes"),
        ("linear10_every2881min", "a linear interval of 1-2880 minutes"),
        (7, "must be all_at_once"),
    ],
)
def test_a_bad_value_fails_synth_naming_the_key(value: Any, message: str) -> None:
    with pytest.raises(ContextError, match=f"'deployment' {message}" if message.startswith("must") else message):
        PlatformConfig.from_context({"deployment": value}.get)


@pytest.mark.parametrize(
    ("stage", "spelling"), [("dev", "all_at_once"), ("sandbox", "all_at_once"), ("prod", "canary10_5min")]
)
def test_the_default_follows_the_stage(stage: str, spelling: str) -> None:
    assert PlatformConfig.from_context({"stage": stage}.get).deployment.spelling == spelling


def test_provisioned_environments_fit_inside_the_reserved_concurrency() -> None:
    with pytest.raises(ContextError, match="at most endpoint_reserved_concurrency"):
        PlatformConfig.from_context({"endpoint_reserved_concurrency": 5, "endpoint_provisioned_concurrency": 6}.get)
    assert (
        PlatformConfig.from_context({"endpoint_provisioned_concurrency": "3"}.get).endpoint_provisioned_concurrency == 3
    )
    with pytest.raises(ContextError, match="'endpoint_provisioned_concurrency' must be an integer"):
        PlatformConfig.from_context({"endpoint_provisioned_concurrency": 0}.get)
