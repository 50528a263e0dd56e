"""``edge=api_gateway``: a regional REST API streaming the endpoint's responses.

Every path and method goes to the function through a Lambda proxy integration in STREAM transfer
mode: API Gateway invokes it with InvokeWithResponseStream and passes the body on as the function
writes it, which works for a function in a VPC (the default, DAX) too. The Lambda Web Adapter
serves this too: in ``response_stream`` mode it reads API Gateway's REST proxy events (its
``lambda_http`` has the ``apigw_rest`` event type) and writes the streamed response as a JSON
prelude (status, headers, cookies), eight NUL bytes, then the body: the format API Gateway's
streaming integrations read, the same one a Function URL reads. It hands the app the event's path,
which has no stage in it.

Limits API Gateway sets on a streamed response, and how the endpoint stays within them:

- time to the first byte, the integration timeout (29 s): the endpoint sends headers and a first
  event within 5 s (S4);
- idle time between two chunks, 5 minutes on a regional endpoint: SSE keep-alives every 15 s;
- 15 minutes in all: a stream ends at ``MCP_STREAM_MAX_SECONDS`` (840 s, S7);
- no caching, no content encoding, no response mapping: none is used.

There is no Function URL (nothing to go around the API), so no origin-verify header either. A
regional WAF web ACL (the edge's rules, stacks/edge_waf.py) is associated with the stage, which
throttles requests (``api_throttle_rate``, ``api_throttle_burst``) and writes access logs. With a
custom domain (``domain_name``) the API's default ``execute-api`` address is disabled: the stage's
name is part of that address's path, which the OAuth well-known documents, served at the origin's
root, could not live with.
"""

from __future__ import annotations

from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_route53_targets as route53_targets
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from stacks.common import log_group
from stacks.config import MCP_PATH, PlatformConfig
from stacks.edge_globals import alias_records, dns_validated_certificate, hosted_zone
from stacks.edge_waf import web_acl

ACCESS_LOG_FIELDS = apigateway.AccessLogFormat.json_with_standard_fields(
    caller=False,
    http_method=True,
    ip=True,
    protocol=True,
    request_time=True,
    resource_path=True,
    response_length=True,
    status=True,
    user=False,
)


class ApiGatewayEdge(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: PlatformConfig,
        function: lambda_.IFunction,
    ) -> None:
        """``function``: the endpoint's live alias, what CodeDeploy shifts between versions."""
        super().__init__(scope, construct_id)
        integration = apigateway.LambdaIntegration(
            function,
            proxy=True,
            response_transfer_mode=apigateway.ResponseTransferMode.STREAM,
            # One permission for the whole API instead of one per method and path.
            scope_permission_to_method=False,
        )
        self.access_logs = log_group(self, "AccessLogs", config)
        self.api = apigateway.RestApi(
            self,
            "Api",
            rest_api_name=f"mcp-platform-{config.stage}",
            description=f"mcp-platform {config.stage}: MCP endpoint (streamed Lambda proxy)",
            endpoint_configuration=apigateway.EndpointConfiguration(types=[apigateway.EndpointType.REGIONAL]),
            # The account-wide CloudWatch role is the account's to own, not one stack's.
            cloud_watch_role=False,
            disable_execute_api_endpoint=config.domain_name is not None,
            deploy_options=apigateway.StageOptions(
                stage_name=config.stage,
                throttling_rate_limit=config.api_throttle_rate,
                throttling_burst_limit=config.api_throttle_burst,
                access_log_destination=apigateway.LogGroupLogDestination(self.access_logs),
                access_log_format=ACCESS_LOG_FIELDS,
                tracing_enabled=config.tracing == "active",  # X-Ray samples here only when chosen
            ),
            # The app answers CORS preflights itself, from its Origin allow-list (S8).
            default_integration=integration,
        )
        self.api.root.add_method("ANY")
        self.api.root.add_proxy(any_method=True)

        self.web_acl = web_acl(self, "WebAcl", config=config, cloudfront=False)
        wafv2.CfnWebACLAssociation(
            self,
            "WebAclAssociation",
            resource_arn=self.api.deployment_stage.stage_arn,
            web_acl_arn=self.web_acl.attr_arn,
        )

        self.domain: apigateway.DomainName | None = None
        if config.domain_name is not None:
            certificate: acm.ICertificate | None = dns_validated_certificate(self, "Certificate", config)
            self.domain = apigateway.DomainName(
                self,
                "Domain",
                domain_name=config.domain_name,
                certificate=certificate,  # type: ignore[arg-type]
                endpoint_type=apigateway.EndpointType.REGIONAL,
                security_policy=apigateway.SecurityPolicy.TLS_1_2,
                mapping=self.api,
            )
            zone = hosted_zone(self, "Zone", config)
            if zone is not None:
                alias_records(self, zone, config, route53_targets.ApiGatewayDomain(self.domain))
        self.url = config.public_url or self.api.url_for_path(MCP_PATH)
