"""Synthesizing the platform for template assertions (used by the session fixtures)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk.assertions import Template

from stacks.app_builder import build_app
from stacks.platform_stack import PlatformStack

# Tests never run pip: the layer asset is hashed from its sources, not bundled.
NO_BUNDLING: dict[str, Any] = {"aws:cdk:bundling-stacks": []}
ALT_CONTEXT: dict[str, Any] = {
    "stage": "prod",
    "dax": "false",  # the string form, as `-c dax=false` delivers it
    "architecture": "x86_64",
    "stream_mode": "PROVISIONED",
    "peak_records_per_s": 5000,
    "avg_record_bytes": 2048,
    "retention_hours": 720,
    "allowed_origins": "https://app.example.com,http://localhost:6274",
    "compatible_with": "0.1",  # an upgrade's first step (docs/operating/upgrades.md)
}

# OAuth 2.1 with the optional Cognito user pool, API keys alongside (migration); no DAX (the
# DAX VPC has no route to an issuer).
OAUTH_CONTEXT: dict[str, Any] = {
    "auth_mode": "api_key,oauth",
    "dax": False,
    "oauth_cognito": "true",
    "oauth_scopes": "mcp/tools mcp/admin",
    "oauth_cognito_callback_urls": ["http://localhost:6274/oauth/callback", "https://client.example.com/callback"],
    "oauth_machine_client": "true",  # the facade is on by default with Cognito
    "allowed_origins": ["https://app.example.com"],
}

# Span export to X-Ray, on the default configuration (DAX and its VPC, arm64).
XRAY_CONTEXT: dict[str, Any] = {"otlp_endpoint": "xray"}
# Span export to an OTLP/HTTP backend with a header from a secret: no DAX (the VPC has no egress).
OTLP_URL_CONTEXT: dict[str, Any] = {
    "otlp_endpoint": "https://api.honeycomb.io",
    "otlp_headers": "x-honeycomb-team",
    "otlp_headers_secret": "mcp-platform/otlp-headers",
    "dax": "false",
    "architecture": "x86_64",
}

# The default configuration with the notification streams on (the string form -c delivers).
SUBSCRIPTIONS_CONTEXT: dict[str, Any] = {"subscriptions": "true"}

# Governance on the default configuration (DAX, its VPC): rate limits as `-c` delivers them (JSON
# text), quotas as cdk.json does (an object).
GOVERNED_CONTEXT: dict[str, Any] = {
    "rate_limits": '{"tool:search": "10/minute", "principal": "60/minute", "client": "600/minute"}',
    "quotas": {"principal": "1000/day", "principal:month": "20000/month"},
}
# A custom traffic shift outside dev, provisioned endpoint environments inside its reserved
# concurrency, no task worker (three functions, three deployment groups).
SHIFTED_CONTEXT: dict[str, Any] = {
    "stage": "prod",
    "dax": "false",
    "tasks": "false",
    "deployment": "linear20_every3min",
    "endpoint_reserved_concurrency": "50",
    "endpoint_provisioned_concurrency": "2",
}
# edge=cloudfront on the default configuration (DAX, API keys), no custom domain; the platform in
# eu-west-1, the web ACL in its us-east-1 stack.
CLOUDFRONT_CONTEXT: dict[str, Any] = {"edge": "cloudfront", "region": "eu-west-1", "waf_rate_limit": "500"}
# edge=cloudfront with OAuth (Cognito and the facade) on a custom domain whose certificate is
# DNS-validated in a hosted zone (created in the us-east-1 stack).
CLOUDFRONT_DOMAIN_CONTEXT: dict[str, Any] = {
    **OAUTH_CONTEXT,
    "edge": "cloudfront",
    "region": "eu-central-1",
    "domain_name": "MCP.Example.com",
    "hosted_zone_id": "Z0123456789ABCDEFGHIJ",
}
# edge=api_gateway on the default configuration (DAX: the endpoint in a VPC), API keys, no domain.
API_GATEWAY_CONTEXT: dict[str, Any] = {"edge": "api_gateway", "api_throttle_rate": "50", "api_throttle_burst": "80"}
# edge=api_gateway with OAuth on a custom domain: an imported certificate, the alias in a zone.
API_GATEWAY_DOMAIN_CONTEXT: dict[str, Any] = {
    **OAUTH_CONTEXT,
    "edge": "api_gateway",
    "domain_name": "mcp.example.org",
    "certificate_arn": "arn:aws:acm:eu-west-1:123456789012:certificate/11111111-2222-3333-4444-555555555555",
    "hosted_zone_id": "Z9876543210ZYXWVUTSRQ",
}
# The minimal profile (stacks/config.py PROFILES): no DAX, one PROVISIONED shard, 24 h, no EFO consumer.
MINIMAL_CONTEXT: dict[str, Any] = {"profile": "minimal"}
# Rate limits alone, outside dev (retained, deletion-protected) and without DAX.
RATE_LIMITED_CONTEXT: dict[str, Any] = {"stage": "prod", "dax": "false", "rate_limits": {"principal": "5/second"}}


@dataclass(frozen=True)
class Synthesized:
    stack: PlatformStack
    template: Template
    json: dict[str, Any]
    template_path: Path

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.json["Resources"].items() if v["Type"] == resource_type}

    def invoked(self, function_name: Any) -> tuple[str, str]:
        """What an invoker's ``FunctionName`` (a mapping's) names: (function logical id, alias
        name), from the one alias it refers to (CDK spells it ``<name from the alias ARN>:<alias>``)."""
        aliases = self.resources("AWS::Lambda::Alias")
        (alias_id,) = [alias_id for alias_id in aliases if {"Ref": alias_id} in _intrinsics(function_name)]
        alias = aliases[alias_id]["Properties"]
        assert function_name == {
            "Fn::Join": ["", [{"Fn::Select": [6, {"Fn::Split": [":", {"Ref": alias_id}]}]}, f":{alias['Name']}"]]
        }
        return alias["FunctionName"]["Ref"], alias["Name"]

    def other_templates(self) -> dict[str, dict[str, Any]]:
        """The app's other stacks' templates by stack name (edge=cloudfront's us-east-1 stack)."""
        return {
            path.name.removesuffix(".template.json"): json.loads(path.read_text())
            for path in self.template_path.parent.glob("*.template.json")
            if path != self.template_path
        }

    def logical_id(self, resource_type: str) -> str:
        (found,) = self.resources(resource_type)
        return found

    def one(self, resource_type: str) -> dict[str, Any]:
        found = list(self.resources(resource_type).values())
        assert len(found) == 1, f"expected one {resource_type}, found {len(found)}"
        return found[0]


def synthesize(tmp: Path, context: dict[str, Any]) -> Synthesized:
    app, stack = build_app({**NO_BUNDLING, **context}, outdir=str(tmp))
    assembly = app.synth()
    artifact = assembly.get_stack_by_name(stack.stack_name)
    path = Path(assembly.directory) / artifact.template_file
    template_json = json.loads(path.read_text())
    return Synthesized(stack, Template.from_json(template_json), template_json, path)


def _intrinsics(value: Any) -> list[Any]:
    """Every dict nested in ``value`` (itself included)."""
    if isinstance(value, dict):
        return [value, *(found for item in value.values() for found in _intrinsics(item))]
    if isinstance(value, list):
        return [found for item in value for found in _intrinsics(item)]
    return []
