"""The WAF web ACL of either edge: a rate-based rule per caller IP and AWS managed rule groups.

The managed groups are chosen, and tuned, so that valid JSON-RPC bodies pass. An MCP request's
body is the arguments of a tool, whatever the tool takes: code, HTML, paths, URLs. The endpoint
bounds its size (``MCP_MAX_REQUEST_BYTES``, 1 MiB) and validates it against the tool's schema; a
pattern rule on the body cannot tell a tool's argument from an attack on a server that never
interprets it. So:

- ``AWSManagedRulesAmazonIpReputationList``: addresses AWS threat intelligence reports; no
  inspection of the request, no false positive on a body.
- ``AWSManagedRulesKnownBadInputsRuleSet``: exploit payloads (Log4j lookups, Java
  deserialization, a ``localhost`` Host); kept as AWS ships it.
- ``AWSManagedRulesCommonRuleSet`` with these rules counted, not blocking:
  ``SizeRestrictions_BODY`` (blocks bodies over 8 KB: a tools/call with a file's contents is
  larger), ``CrossSiteScripting_BODY`` / ``GenericLFI_BODY`` / ``GenericRFI_BODY`` /
  ``EC2MetaDataSSRF_BODY`` (an argument holding HTML, ``../``, a URL or 169.254.169.254 is data
  to a tool), ``GenericRFI_QUERYARGUMENTS`` (the OAuth facade's ``/authorize`` carries a native
  client's ``redirect_uri=http://127.0.0.1:<port>/...``, RFC 8252) and ``NoUserAgent_HEADER``
  (SDK and machine clients need not send one). Counted, they still show in the metrics and the
  sampled requests. Its URI, query and header rules block as shipped.

The rate-based rule comes first: a flood from one address is refused before anything else is
evaluated, with a 429 and a JSON-RPC error body (WAF's own refusals are a bare 403).
"""

from __future__ import annotations

import json

from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from mcp_platform.protocol.jsonrpc import INVALID_REQUEST
from stacks.config import PlatformConfig

RATE_WINDOW_SECONDS = 300  # the rate-based rule's evaluation window (waf_rate_limit counts per window)
RATE_LIMITED_BODY = "RateLimited"
COUNTED_COMMON_RULES = (
    "SizeRestrictions_BODY",
    "CrossSiteScripting_BODY",
    "GenericLFI_BODY",
    "GenericRFI_BODY",
    "EC2MetaDataSSRF_BODY",
    "GenericRFI_QUERYARGUMENTS",
    "NoUserAgent_HEADER",
)
MANAGED_GROUPS = (
    ("AWSManagedRulesAmazonIpReputationList", ()),
    ("AWSManagedRulesCommonRuleSet", COUNTED_COMMON_RULES),
    ("AWSManagedRulesKnownBadInputsRuleSet", ()),
)


def _visibility(metric: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
    return wafv2.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, metric_name=metric, sampled_requests_enabled=True
    )


def web_acl(scope: Construct, construct_id: str, *, config: PlatformConfig, cloudfront: bool) -> wafv2.CfnWebACL:
    """A web ACL of scope CLOUDFRONT (created in us-east-1) or REGIONAL (API Gateway's region)."""
    prefix = f"mcp-{config.stage}-{'cf' if cloudfront else 'api'}"
    rate_limited = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": INVALID_REQUEST, "message": "Too many requests from this address; retry later"},
        }
    )
    rules = [
        wafv2.CfnWebACL.RuleProperty(
            name="RateLimitPerIp",
            priority=0,
            statement=wafv2.CfnWebACL.StatementProperty(
                rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                    aggregate_key_type="IP", limit=config.waf_rate_limit, evaluation_window_sec=RATE_WINDOW_SECONDS
                )
            ),
            action=wafv2.CfnWebACL.RuleActionProperty(
                block=wafv2.CfnWebACL.BlockActionProperty(
                    custom_response=wafv2.CfnWebACL.CustomResponseProperty(
                        response_code=429,
                        custom_response_body_key=RATE_LIMITED_BODY,
                        response_headers=[
                            wafv2.CfnWebACL.CustomHTTPHeaderProperty(name="retry-after", value="60"),
                        ],
                    )
                )
            ),
            visibility_config=_visibility(f"{prefix}-rate-limit"),
        )
    ]
    for priority, (group, counted) in enumerate(MANAGED_GROUPS, start=1):
        rules.append(
            wafv2.CfnWebACL.RuleProperty(
                name=group,
                priority=priority,
                statement=wafv2.CfnWebACL.StatementProperty(
                    managed_rule_group_statement=wafv2.CfnWebACL.ManagedRuleGroupStatementProperty(
                        vendor_name="AWS",
                        name=group,
                        rule_action_overrides=[
                            wafv2.CfnWebACL.RuleActionOverrideProperty(
                                name=rule, action_to_use=wafv2.CfnWebACL.RuleActionProperty(count={})
                            )
                            for rule in counted
                        ]
                        or None,
                    )
                ),
                override_action=wafv2.CfnWebACL.OverrideActionProperty(none={}),
                visibility_config=_visibility(f"{prefix}-{group}"),
            )
        )
    return wafv2.CfnWebACL(
        scope,
        construct_id,
        scope="CLOUDFRONT" if cloudfront else "REGIONAL",
        default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
        description=f"mcp-platform {config.stage}: rate limit per IP and AWS managed rules tuned for JSON-RPC",
        custom_response_bodies={
            RATE_LIMITED_BODY: wafv2.CfnWebACL.CustomResponseBodyProperty(
                content_type="APPLICATION_JSON", content=rate_limited
            )
        },
        rules=rules,
        visibility_config=_visibility(prefix),
    )
