"""E1, edge=cloudfront: the distribution in front of the Function URL, its origin-verify header, the
WAF web ACL in a us-east-1 stack, the custom domain; edge=none unchanged; refused combinations."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform.config import EnvVars
from mcp_platform.transport.origin_verify import ORIGIN_VERIFY_HEADER
from stacks.config import ContextError, PlatformConfig
from stacks.edge_waf import COUNTED_COMMON_RULES
from tests.infra.synth import Synthesized

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

# CloudFront's managed origin request policy "AllViewerExceptHostHeader" (a fixed id).
ALL_VIEWER_EXCEPT_HOST = "b689b0a8-53d0-40ab-baf2-68738e2966ac"


def endpoint_environment(s: Synthesized) -> dict[str, Any]:
    (function,) = [
        f for f in s.resources("AWS::Lambda::Function").values() if f["Properties"].get("Handler") == "run.sh"
    ]
    variables: dict[str, Any] = function["Properties"]["Environment"]["Variables"]
    return variables


def edge_template(s: Synthesized) -> dict[str, Any]:
    (template,) = s.other_templates().values()
    return template


def of_type(template: dict[str, Any], resource_type: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == resource_type]


def test_edge_none_is_the_function_url_alone(default: Synthesized) -> None:
    # Given the default configuration / Then nothing of an edge is there, and no check is asked for
    assert not default.other_templates()
    for kind in ("AWS::CloudFront::Distribution", "AWS::WAFv2::WebACL", "AWS::ApiGateway::RestApi"):
        assert not default.resources(kind), kind
    assert default.one("AWS::Lambda::Url")["Properties"]["InvokeMode"] == "RESPONSE_STREAM"
    assert EnvVars.ORIGIN_VERIFY_SECRET not in endpoint_environment(default)


def test_the_distribution_forwards_every_method_and_header_and_caches_nothing(cloudfront: Synthesized) -> None:
    config = cloudfront.one("AWS::CloudFront::Distribution")["Properties"]["DistributionConfig"]
    behavior = config["DefaultCacheBehavior"]
    assert set(behavior["AllowedMethods"]) == {"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"}
    # Every viewer header but Host (Mcp-*, MCP-Protocol-Version, Last-Event-ID, traceparent, Origin, ...)
    assert behavior["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST
    # And Authorization, which only a cache policy can forward: keyed on it, nothing kept by default
    (policy,) = [
        p["Properties"]["CachePolicyConfig"] for p in cloudfront.resources("AWS::CloudFront::CachePolicy").values()
    ]
    assert policy["DefaultTTL"] == 0 and policy["MinTTL"] == 0 and policy["MaxTTL"] <= 1
    assert policy["ParametersInCacheKeyAndForwardedToOrigin"]["HeadersConfig"]["Headers"] == ["Authorization"]
    assert behavior["ViewerProtocolPolicy"] == "https-only" and behavior["Compress"] is False


def test_the_origin_is_the_function_url_with_the_secret_header(cloudfront: Synthesized) -> None:
    (origin,) = cloudfront.one("AWS::CloudFront::Distribution")["Properties"]["DistributionConfig"]["Origins"]
    url = cloudfront.one("AWS::Lambda::Url")
    assert url["Properties"]["AuthType"] == "NONE"  # OAC would want every POST body signed
    url_id = cloudfront.logical_id("AWS::Lambda::Url")  # the live alias's URL
    assert origin["DomainName"] == {"Fn::Select": [2, {"Fn::Split": ["/", {"Fn::GetAtt": [url_id, "FunctionUrl"]}]}]}
    (header,) = origin["OriginCustomHeaders"]
    assert header["HeaderName"] == ORIGIN_VERIFY_HEADER
    # The value: a dynamic reference to the secret's origin_verify_key, resolved at deploy (never in the template)
    (secret_id,) = [k for k, v in cloudfront.resources("AWS::SecretsManager::Secret").items() if "OriginVerify" in k]
    assert header["HeaderValue"] == {
        "Fn::Join": ["", ["{{resolve:secretsmanager:", {"Ref": secret_id}, ":SecretString:k1::}}"]]
    }
    # And the endpoint is told the secret, and may read it
    assert endpoint_environment(cloudfront)[EnvVars.ORIGIN_VERIFY_SECRET] == {"Ref": secret_id}
    grants = [
        statement
        for policy in cloudfront.resources("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if {"Ref": secret_id}
        in (statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]])
    ]
    assert any("secretsmanager:GetSecretValue" in s["Action"] for s in grants)


def test_keep_alives_come_well_within_the_origin_read_timeout(cloudfront: Synthesized) -> None:
    # S7 behind CloudFront: a stream idle longer than the read timeout would be cut by CloudFront
    (origin,) = cloudfront.one("AWS::CloudFront::Distribution")["Properties"]["DistributionConfig"]["Origins"]
    read_timeout = origin["CustomOriginConfig"]["OriginReadTimeout"]
    keepalive = int(endpoint_environment(cloudfront)[EnvVars.KEEPALIVE_SECONDS])
    assert read_timeout <= 60  # no quota increase needed
    assert keepalive * 2 <= read_timeout


def test_the_web_acl_lives_in_us_east_1_and_the_distribution_reads_it_across_regions(cloudfront: Synthesized) -> None:
    # Given the platform in eu-west-1
    assert cloudfront.stack.region == "eu-west-1"
    edge = edge_template(cloudfront)
    (acl,) = [r["Properties"] for r in of_type(edge, "AWS::WAFv2::WebACL")]
    assert acl["Scope"] == "CLOUDFRONT"
    assert next(iter(cloudfront.other_templates())).endswith("-edge")
    assert cloudfront.stack.dependencies and cloudfront.stack.dependencies[0].region == "us-east-1"
    # Then the distribution's WebACLId comes from the cross-region reader (an SSM parameter it reads)
    config = cloudfront.one("AWS::CloudFront::Distribution")["Properties"]["DistributionConfig"]
    assert "ExportsReader" in str(config["WebACLId"])
    assert of_type(edge, "Custom::CrossRegionExportWriter")


def test_the_waf_rate_limits_per_ip_first_and_lets_json_rpc_bodies_through(cloudfront: Synthesized) -> None:
    (acl,) = [r["Properties"] for r in of_type(edge_template(cloudfront), "AWS::WAFv2::WebACL")]
    rules = sorted(acl["Rules"], key=lambda rule: rule["Priority"])
    rate = rules[0]
    assert rate["Statement"]["RateBasedStatement"] == {
        "AggregateKeyType": "IP",
        "Limit": 500,
        "EvaluationWindowSec": 300,
    }
    assert rate["Action"]["Block"]["CustomResponse"]["ResponseCode"] == 429
    groups = {r["Statement"]["ManagedRuleGroupStatement"]["Name"]: r for r in rules[1:]}
    assert set(groups) == {
        "AWSManagedRulesAmazonIpReputationList",
        "AWSManagedRulesCommonRuleSet",
        "AWSManagedRulesKnownBadInputsRuleSet",
    }
    common = groups["AWSManagedRulesCommonRuleSet"]["Statement"]["ManagedRuleGroupStatement"]
    counted = {o["Name"] for o in common["RuleActionOverrides"] if "Count" in o["ActionToUse"]}
    # The 8 KB body limit and the body patterns would refuse valid tool arguments: counted only
    assert (
        {"SizeRestrictions_BODY", "CrossSiteScripting_BODY", "GenericLFI_BODY"} <= counted == set(COUNTED_COMMON_RULES)
    )


def test_without_a_domain_the_public_url_is_the_distribution(cloudfront: Synthesized) -> None:
    outputs = cloudfront.json["Outputs"]
    assert outputs["McpEndpointUrl"]["Value"] == {
        "Fn::Join": [
            "",
            [
                "https://",
                {"Fn::GetAtt": [cloudfront.logical_id("AWS::CloudFront::Distribution"), "DomainName"]},
                "/mcp",
            ],
        ]
    }
    assert "lambda-url" not in str(outputs["McpEndpointUrl"]["Value"])


def test_on_a_custom_domain_oauth_the_facade_and_origins_use_it(cloudfront_domain: Synthesized) -> None:
    config = cloudfront_domain.one("AWS::CloudFront::Distribution")["Properties"]["DistributionConfig"]
    assert config["Aliases"] == ["mcp.example.com"]
    assert config["ViewerCertificate"]["MinimumProtocolVersion"] == "TLSv1.2_2021"
    assert "ExportsReader" in str(config["ViewerCertificate"]["AcmCertificateArn"])
    # The certificate: DNS-validated in the zone, created in us-east-1 (CloudFront reads it there)
    (certificate,) = of_type(edge_template(cloudfront_domain), "AWS::CertificateManager::Certificate")
    assert certificate["Properties"]["DomainValidationOptions"] == [
        {"DomainName": "mcp.example.com", "HostedZoneId": "Z0123456789ABCDEFGHIJ"}
    ]
    records = cloudfront_domain.resources("AWS::Route53::RecordSet").values()
    assert sorted(r["Properties"]["Type"] for r in records) == ["A", "AAAA"]
    assert {r["Properties"]["Name"] for r in records} == {"mcp.example.com."}
    # The resource identifier (its origin the facade's issuer) and the Origin allow-list
    environment = endpoint_environment(cloudfront_domain)
    assert environment[EnvVars.OAUTH_AUDIENCE] == "https://mcp.example.com/mcp"
    assert "https://mcp.example.com" in environment[EnvVars.ALLOWED_ORIGINS].split(",")
    # And the facade's Cognito client calls back on the domain only (the Function URL refuses callers)
    (facade_client,) = [
        c["Properties"]
        for k, c in cloudfront_domain.resources("AWS::Cognito::UserPoolClient").items()
        if "FacadeClient" in k
    ]
    assert facade_client["CallbackURLs"] == ["https://mcp.example.com/callback"]
    assert cloudfront_domain.json["Outputs"]["McpEndpointUrl"]["Value"] == "https://mcp.example.com/mcp"


def config_from(**context: Any) -> PlatformConfig:
    return PlatformConfig.from_context(context.get)


@pytest.mark.parametrize(
    ("context", "key"),
    [
        ({"edge": "fastly"}, "edge"),
        ({"edge": "cloudfront"}, "region"),  # the web ACL's stack is referenced across regions
        (
            {
                "domain_name": "mcp.example.com",
                "certificate_arn": "arn:aws:acm:us-east-1:123456789012:certificate/" + "0" * 36,
            },
            "domain_name",
        ),
        ({"edge": "cloudfront", "region": "eu-west-1", "domain_name": "mcp.example.com"}, "certificate_arn"),
        ({"edge": "cloudfront", "region": "eu-west-1", "hosted_zone_id": "Z123"}, "hosted_zone_id"),
        (
            {
                "edge": "cloudfront",
                "region": "eu-west-1",
                "domain_name": "mcp.example.com",
                "certificate_arn": "arn:aws:acm:eu-west-1:123456789012:certificate/" + "0" * 36,
            },
            "certificate_arn",  # CloudFront reads certificates in us-east-1 only
        ),
        (
            {"edge": "cloudfront", "region": "eu-west-1", "domain_name": "bad_name", "hosted_zone_id": "Z1"},
            "domain_name",
        ),
        (
            {
                "edge": "cloudfront",
                "region": "eu-west-1",
                "auth_mode": "oauth",
                "dax": "false",
                "oauth_cognito": "true",
            },
            "domain_name",  # the function cannot be told the distribution's name
        ),
        ({"edge": "cloudfront", "region": "eu-west-1", "origin_verify_key": "k 2"}, "origin_verify_key"),
        ({"edge": "cloudfront", "region": "eu-west-1", "waf_rate_limit": "5"}, "waf_rate_limit"),
    ],
)
def test_combinations_that_could_not_be_served_fail_synth_naming_the_key(context: dict[str, Any], key: str) -> None:
    with pytest.raises(ContextError, match=f"'{key}'"):
        config_from(**context)


def test_oauth_behind_cloudfront_may_name_the_distribution_by_its_audience() -> None:
    # Given the distribution's URL, known after a first deploy, as the audience
    config = config_from(
        edge="cloudfront",
        region="eu-west-1",
        auth_mode="oauth",
        dax="false",
        oauth_cognito="true",
        oauth_audience="https://d111111abcdef8.cloudfront.net/mcp",
    )
    # Then it is the public origin (facade issuer, Origin allow-list)
    assert config.public_origin == "https://d111111abcdef8.cloudfront.net"
    assert config.browser_origins == ("https://d111111abcdef8.cloudfront.net",)
