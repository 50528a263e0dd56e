"""E1, edge=api_gateway: a regional REST API streaming the Lambda proxy response to the endpoint (no
Function URL), with a regional WAF web ACL, stage throttling and an optional custom domain."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform.config import EnvVars
from stacks.config import ContextError, PlatformConfig
from tests.infra.synth import Synthesized
from tests.infra.test_edge_cloudfront import endpoint_environment

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

IDLE_TIMEOUT_S = 300  # API Gateway's idle timeout of a streamed response (regional endpoint)
TIME_TO_FIRST_BYTE_S = 29  # the integration timeout, which a streamed response's first byte must beat


def test_every_path_and_method_is_a_streamed_proxy_to_the_endpoint(api_gateway: Synthesized) -> None:
    api = api_gateway.one("AWS::ApiGateway::RestApi")["Properties"]
    assert api["EndpointConfiguration"]["Types"] == ["REGIONAL"]
    methods = api_gateway.resources("AWS::ApiGateway::Method").values()
    assert len(methods) == 2  # the root and {proxy+}
    (proxy,) = api_gateway.resources("AWS::ApiGateway::Resource").values()
    assert proxy["Properties"]["PathPart"] == "{proxy+}"
    for method in methods:
        properties = method["Properties"]
        integration = properties["Integration"]
        assert properties["HttpMethod"] == "ANY" and properties["AuthorizationType"] == "NONE"
        assert integration["Type"] == "AWS_PROXY" and integration["ResponseTransferMode"] == "STREAM"
        # InvokeWithResponseStream's path, which works for a function in a VPC
        assert "/response-streaming-invocations" in str(integration["Uri"])
        assert "EndpointFunctionLive" in str(integration["Uri"])  # the alias CodeDeploy shifts
        assert "TimeoutInMillis" not in integration  # the default 29 s: time to the first byte


def test_no_function_url_so_nothing_goes_around_the_api(api_gateway: Synthesized) -> None:
    assert not api_gateway.resources("AWS::Lambda::Url")
    (permission,) = [
        p["Properties"]
        for p in api_gateway.resources("AWS::Lambda::Permission").values()
        if "EndpointFunction" in str(p["Properties"]["FunctionName"])
    ]
    assert permission["Principal"] == "apigateway.amazonaws.com"
    assert EnvVars.ORIGIN_VERIFY_SECRET not in endpoint_environment(api_gateway)


def test_the_stage_throttles_logs_and_has_the_regional_web_acl(api_gateway: Synthesized) -> None:
    stage = api_gateway.one("AWS::ApiGateway::Stage")["Properties"]
    (settings,) = stage["MethodSettings"]
    assert (settings["ThrottlingRateLimit"], settings["ThrottlingBurstLimit"]) == (50, 80)
    # X-Ray samples at the stage only with tracing=active (stacks' X-Ray sampling is one key)
    assert "DestinationArn" in stage["AccessLogSetting"] and stage["TracingEnabled"] is False
    acl = api_gateway.one("AWS::WAFv2::WebACL")["Properties"]
    assert acl["Scope"] == "REGIONAL"
    assert any("RateBasedStatement" in rule["Statement"] for rule in acl["Rules"])
    association = api_gateway.one("AWS::WAFv2::WebACLAssociation")["Properties"]
    assert "/stages/" in str(association["ResourceArn"])


def test_keep_alives_and_the_stream_cap_fit_api_gateways_limits(api_gateway: Synthesized) -> None:
    environment = endpoint_environment(api_gateway)
    assert int(environment[EnvVars.KEEPALIVE_SECONDS]) * 2 <= IDLE_TIMEOUT_S
    assert int(environment[EnvVars.STREAM_MAX_SECONDS]) < 15 * 60  # API Gateway ends a stream at 15 minutes
    assert environment["AWS_LWA_INVOKE_MODE"] == "response_stream"


def test_the_public_url_is_the_stage_without_a_domain(api_gateway: Synthesized) -> None:
    value = api_gateway.json["Outputs"]["McpEndpointUrl"]["Value"]
    assert ".execute-api." in str(value) and str(value).endswith("'/mcp']]}")


def test_on_a_custom_domain_the_execute_api_address_is_off_and_oauth_uses_the_domain(
    api_gateway_domain: Synthesized,
) -> None:
    s = api_gateway_domain
    assert s.one("AWS::ApiGateway::RestApi")["Properties"]["DisableExecuteApiEndpoint"] is True
    domain = s.one("AWS::ApiGateway::DomainName")["Properties"]
    assert domain["DomainName"] == "mcp.example.org" and domain["SecurityPolicy"] == "TLS_1_2"
    assert domain["RegionalCertificateArn"].startswith("arn:aws:acm:eu-west-1:")
    mapping = s.one("AWS::ApiGateway::BasePathMapping")["Properties"]
    assert "BasePath" not in mapping  # the domain's root is the stage: no stage in the path
    records = s.resources("AWS::Route53::RecordSet").values()
    assert sorted(r["Properties"]["Type"] for r in records) == ["A", "AAAA"]
    environment = endpoint_environment(s)
    assert environment[EnvVars.OAUTH_AUDIENCE] == "https://mcp.example.org/mcp"
    assert "https://mcp.example.org" in environment[EnvVars.ALLOWED_ORIGINS].split(",")
    assert s.json["Outputs"]["McpEndpointUrl"]["Value"] == "https://mcp.example.org/mcp"


def config_from(**context: Any) -> PlatformConfig:
    return PlatformConfig.from_context(context.get)


def test_oauth_on_the_stage_url_is_refused_for_want_of_a_root() -> None:
    with pytest.raises(ContextError, match="'domain_name'"):
        config_from(edge="api_gateway", auth_mode="oauth", dax="false", oauth_cognito="true")


def test_a_certificate_from_another_region_is_refused_when_the_region_is_known() -> None:
    certificate = "arn:aws:acm:us-east-1:123456789012:certificate/" + "0" * 36
    with pytest.raises(ContextError, match="'certificate_arn'"):
        config_from(edge="api_gateway", region="eu-west-1", domain_name="mcp.example.org", certificate_arn=certificate)
    assert config_from(edge="api_gateway", domain_name="mcp.example.org", certificate_arn=certificate).edge
