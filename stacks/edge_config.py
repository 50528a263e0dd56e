"""CDK context of the public edge: which one, its custom domain, its WAF and throttling limits.

``edge`` chooses what callers reach: ``none`` (the Function URL itself, as before), ``cloudfront``
(a distribution with a WAF web ACL in front of the Function URL, which refuses calls that did not
come through it) or ``api_gateway`` (a regional REST API streaming the Lambda proxy response, with a
regional WAF web ACL and stage throttling; no Function URL at all). See docs/operating/edge.md.

Synth fails on a combination that could not be served:

- a custom domain (``domain_name``) without an edge (Function URLs take none), or without a way to
  a certificate (``certificate_arn``, or ``hosted_zone_id`` for a DNS-validated one);
- with ``cloudfront``: a ``certificate_arn`` outside us-east-1 (CloudFront reads certificates there
  only), or no ``region``: the distribution's web ACL has to be created in us-east-1, so it gets a
  stack of its own there, referenced across regions, which needs the platform stack's region named;
- OAuth behind an edge without a public origin known at synth (``domain_name``, or
  ``oauth_audience``): the distribution's own name cannot be handed to the function (the
  distribution names the function's URL: a circular reference), and on API Gateway's default URL
  the stage is part of the path, so the OAuth well-known documents at the origin's root would not
  be reachable: there a custom domain is needed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

EDGES = ("none", "cloudfront", "api_gateway")
# CloudFront reads viewer certificates and CLOUDFRONT-scope web ACLs in this region only.
CLOUDFRONT_REGION = "us-east-1"
DOMAIN_PATTERN = re.compile(r"^(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")
CERTIFICATE_PATTERN = re.compile(r"^arn:aws[a-z-]*:acm:(?P<region>[a-z0-9-]+):\d{12}:certificate/[0-9a-f-]{36}$")
HOSTED_ZONE_PATTERN = re.compile(r"^Z[A-Z0-9]{1,32}$")
REGION_PATTERN = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
KEY_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,32}$")

EDGE_DEFAULTS: dict[str, Any] = {
    "edge": "none",
    "domain_name": None,
    "certificate_arn": None,
    "hosted_zone_id": None,
    "region": None,  # None: environment-agnostic (edge=cloudfront needs it)
    "waf_rate_limit": 2000,  # requests per caller IP per 5 minutes, then blocked (WAF rate-based rule)
    "api_throttle_rate": 100,  # API Gateway stage: steady requests per second
    "api_throttle_burst": 200,  # API Gateway stage: burst
    "origin_verify_key": "k1",  # the key id (in the origin-verify secret) CloudFront sends
}


def edge_context(
    raw: Callable[[str], Any],
    fail: Callable[[str, str, Any], Exception],
    integer: Callable[[str, Any, int, int], int],
    *,
    oauth: bool,
    oauth_audience: str,
) -> dict[str, Any]:
    """The validated edge fields of PlatformConfig."""
    edge = str(raw("edge")).strip().lower()
    if edge not in EDGES:
        raise fail("edge", "one of " + ", ".join(EDGES), raw("edge"))
    domain = _optional(raw, "domain_name", DOMAIN_PATTERN, "a DNS name like mcp.example.com", fail, lower=True)
    certificate = _optional(raw, "certificate_arn", CERTIFICATE_PATTERN, "an ACM certificate ARN", fail)
    zone = _optional(raw, "hosted_zone_id", HOSTED_ZONE_PATTERN, "a Route 53 hosted zone id (Z...)", fail)
    region = _optional(raw, "region", REGION_PATTERN, "an AWS region name like eu-west-1", fail)
    if domain is not None and edge == "none":
        raise fail("domain_name", "unset with edge=none (a Function URL takes no custom domain: set edge)", domain)
    if domain is None and (certificate is not None or zone is not None):
        key = "certificate_arn" if certificate is not None else "hosted_zone_id"
        raise fail(key, "unset unless domain_name is set", certificate or zone)
    if domain is not None and certificate is None and zone is None:
        raise fail("certificate_arn", "an ACM certificate ARN, or hosted_zone_id set (a DNS-validated one)", None)
    if edge == "cloudfront":
        if region is None:
            raise fail(
                "region",
                "the platform stack's region with edge=cloudfront (the web ACL lives in us-east-1, in a stack "
                "of its own referenced across regions)",
                None,
            )
        match = CERTIFICATE_PATTERN.fullmatch(certificate or "")
        if match is not None and match["region"] != CLOUDFRONT_REGION:
            raise fail("certificate_arn", f"a certificate in {CLOUDFRONT_REGION} with edge=cloudfront", certificate)
    match = CERTIFICATE_PATTERN.fullmatch(certificate or "")
    if edge == "api_gateway" and region is not None and match is not None and match["region"] != region:
        raise fail(
            "certificate_arn", f"a certificate in the stack's region ({region}) with edge=api_gateway", certificate
        )
    if oauth and edge == "api_gateway" and domain is None:
        raise fail(
            "domain_name",
            "set with edge=api_gateway and OAuth (the default URL has the stage in its path: the well-known "
            "documents at the origin's root would be unreachable)",
            None,
        )
    if oauth and edge == "cloudfront" and domain is None and not oauth_audience:
        raise fail(
            "domain_name",
            "set with edge=cloudfront and OAuth, or oauth_audience set to the distribution's URL + /mcp "
            "(the function cannot be told the distribution's name: it names the function's URL)",
            None,
        )
    key_id = str(raw("origin_verify_key"))
    if not KEY_ID_PATTERN.fullmatch(key_id):
        raise fail("origin_verify_key", "a key id (letters, digits, '_' or '-')", key_id)
    return {
        "edge": edge,
        "domain_name": domain,
        "certificate_arn": certificate,
        "hosted_zone_id": zone,
        "region": region,
        "waf_rate_limit": integer("waf_rate_limit", raw("waf_rate_limit"), 10, 2_000_000_000),
        "api_throttle_rate": integer("api_throttle_rate", raw("api_throttle_rate"), 1, 10_000),
        "api_throttle_burst": integer("api_throttle_burst", raw("api_throttle_burst"), 1, 5_000),
        "origin_verify_key": key_id,
    }


def _optional(
    raw: Callable[[str], Any],
    key: str,
    pattern: re.Pattern[str],
    described: str,
    fail: Callable[[str, str, Any], Exception],
    *,
    lower: bool = False,
) -> str | None:
    value = raw(key)
    if value is None:
        return None
    text = str(value).strip().rstrip(".").lower() if lower else str(value).strip()
    if not pattern.fullmatch(text):
        raise fail(key, described, value)
    return text
