"""``edge=cloudfront``'s resources that CloudFront reads in us-east-1 only: a stack of their own.

A CLOUDFRONT-scope web ACL must be created in us-east-1, and so must a distribution's ACM
certificate. Rather than require the whole platform there, this stack (``McpPlatform-<stage>-edge``)
is deployed to us-east-1 and the platform stack, in its own region (context key ``region``),
refers to the web ACL's and the certificate's ARNs through CDK's cross-region references: the
edge stack writes them to SSM parameters in the platform's region (a custom resource), the
platform stack reads them there (another). Both stacks therefore have an explicit region, and
``cdk deploy --all`` deploys this one first. The references are strong: this stack cannot be
deleted, nor the ARNs changed, while the platform stack uses them (CDK's rule, not ours).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_route53 as route53
from constructs import Construct

from stacks.config import PlatformConfig
from stacks.edge_config import CLOUDFRONT_REGION
from stacks.edge_waf import web_acl


def hosted_zone(scope: Construct, construct_id: str, config: PlatformConfig) -> route53.IHostedZone | None:
    """The zone of ``hosted_zone_id``. Its name is not asked for: records are named fully
    qualified (``<domain_name>.``) and certificate validation needs the id only."""
    if config.hosted_zone_id is None or config.domain_name is None:
        return None
    return route53.HostedZone.from_hosted_zone_attributes(
        scope, construct_id, hosted_zone_id=config.hosted_zone_id, zone_name=config.domain_name
    )


def dns_validated_certificate(scope: Construct, construct_id: str, config: PlatformConfig) -> acm.ICertificate | None:
    """``certificate_arn``, or a certificate for ``domain_name`` validated in ``hosted_zone_id``."""
    if config.domain_name is None:
        return None
    if config.certificate_arn is not None:
        return acm.Certificate.from_certificate_arn(scope, construct_id, config.certificate_arn)
    zone = hosted_zone(scope, f"{construct_id}Zone", config)
    return acm.Certificate(
        scope,
        construct_id,
        domain_name=config.domain_name,
        validation=acm.CertificateValidation.from_dns(zone),
    )


def alias_records(
    scope: Construct, zone: route53.IHostedZone, config: PlatformConfig, target: route53.IAliasRecordTarget
) -> None:
    """``domain_name`` -> the edge, over IPv4 and IPv6."""
    record_name = f"{config.domain_name}."
    alias = route53.RecordTarget.from_alias(target)
    route53.ARecord(scope, "AliasV4", zone=zone, record_name=record_name, target=alias)
    route53.AaaaRecord(scope, "AliasV6", zone=zone, record_name=record_name, target=alias)


class EdgeGlobalsStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: PlatformConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        if self.region != CLOUDFRONT_REGION:
            raise ValueError(f"the CloudFront edge's web ACL and certificate live in {CLOUDFRONT_REGION}")
        self.web_acl = web_acl(self, "WebAcl", config=config, cloudfront=True)
        # Only one this stack creates crosses regions; an imported ARN is passed as it is.
        self.certificate = (
            dns_validated_certificate(self, "Certificate", config) if config.certificate_arn is None else None
        )
