"""Span export in the template: off by default (no layer, no variable, no grant), on with
``otlp_endpoint`` (the collector extension on all four functions, its configuration inline, the
grants it needs), and the key's rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_platform.config import EnvVars
from stacks.config import ContextError, PlatformConfig
from stacks.telemetry import COLLECTOR_ACCOUNT, COLLECTOR_CONFIG_VARIABLE, TRACES_URL
from tests.infra.iam import role_statements
from tests.infra.synth import Synthesized, synthesize
from tests.infra.test_functions import HANDLERS, platform_functions

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

OTLP_VARIABLES = {COLLECTOR_CONFIG_VARIABLE, EnvVars.OTLP_TRACES_ENDPOINT}
LAMBDA_ENVIRONMENT_LIMIT = 4096  # bytes of all names and values of one function's environment


def layers(function: dict[str, Any]) -> list[str]:
    return [json.dumps(layer) for layer in function["Properties"].get("Layers", [])]


def collector_layers(function: dict[str, Any]) -> list[str]:
    return [layer for layer in layers(function) if "opentelemetry-collector" in layer]


def collector_config(function: dict[str, Any]) -> dict[str, Any]:
    uri = function["Properties"]["Environment"]["Variables"][COLLECTOR_CONFIG_VARIABLE]
    assert uri.startswith("yaml:")
    config: dict[str, Any] = json.loads(uri.removeprefix("yaml:"))  # JSON is YAML: the collector reads it
    return config


def actions_on(statements: list[dict[str, Any]], resource_text: str) -> set[str]:
    found: set[str] = set()
    for statement in statements:
        if resource_text in json.dumps(statement.get("Resource")):
            actions = statement["Action"]
            found |= set(actions if isinstance(actions, list) else [actions])
    return found


def test_off_by_default_no_function_has_the_collector_its_variables_or_a_grant(variant: Synthesized) -> None:
    for function in platform_functions(variant).values():
        assert collector_layers(function) == []
        assert not OTLP_VARIABLES & function["Properties"]["Environment"]["Variables"].keys()
    assert "otlp" not in json.dumps(variant.json).lower()


@pytest.mark.parametrize("fixture", ["xray", "otlp_url"])
def test_on_every_function_gets_the_collector_layer_of_its_architecture_and_the_receivers_url(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    s: Synthesized = request.getfixturevalue(fixture)
    functions = platform_functions(s)
    assert {f["Properties"]["Handler"] for f in functions.values()} == HANDLERS
    architecture = "arm64" if fixture == "xray" else "amd64"
    for function in functions.values():
        (layer,) = collector_layers(function)
        assert COLLECTOR_ACCOUNT in layer and f"opentelemetry-collector-{architecture}-0_23_0:1" in layer
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables[EnvVars.OTLP_TRACES_ENDPOINT] == TRACES_URL == "http://localhost:4318/v1/traces"
        # The collector receives on the port the platform sends to, and hands spans on after the response
        config = collector_config(function)
        assert config["receivers"]["otlp"]["protocols"]["http"]["endpoint"] == "localhost:4318"
        assert config["service"]["pipelines"]["traces"] == {
            "receivers": ["otlp"],
            "processors": ["decouple"],
            "exporters": ["otlphttp"],
        }
        # And the whole environment still fits Lambda's limit (an intrinsic function counted as the
        # template writes it, about the length of what it resolves to)
        size = sum(len(name) + len(json.dumps(value)) for name, value in variables.items())
        assert size < LAMBDA_ENVIRONMENT_LIMIT, (function["Properties"]["Handler"], size)


def test_xray_signs_with_the_role_which_tracing_allows_to_put_segments(xray: Synthesized) -> None:
    for function in platform_functions(xray).values():
        config = collector_config(function)
        assert config["exporters"]["otlphttp"] == {
            "traces_endpoint": "https://xray.${env:AWS_REGION}.amazonaws.com/v1/traces",
            "auth": {"authenticator": "sigv4auth"},
        }
        assert config["extensions"] == {"sigv4auth": {"region": "${env:AWS_REGION}", "service": "xray"}}
        assert config["service"]["extensions"] == ["sigv4auth"]
        # X-Ray's OTLP endpoint is authorized as xray:PutTraceSegments, which Lambda's tracing grants
        # in either mode (pass_through by default)
        assert function["Properties"]["TracingConfig"] == {"Mode": "PassThrough"}
        assert "xray:PutTraceSegments" in actions_on(role_statements(xray, function), "*")
    # The VPC functions reach X-Ray through its interface endpoint (DAX is on here)
    services = json.dumps(xray.resources("AWS::EC2::VPCEndpoint"))
    assert ".xray" in services


def test_a_backend_gets_its_headers_from_the_secret_which_every_function_may_read(otlp_url: Synthesized) -> None:
    secret = "mcp-platform/otlp-headers"
    for function in platform_functions(otlp_url).values():
        exporter = collector_config(function)["exporters"]["otlphttp"]
        assert exporter == {
            "endpoint": "https://api.honeycomb.io",
            "headers": {"x-honeycomb-team": "${secretsmanager:mcp-platform/otlp-headers#x-honeycomb-team}"},
        }
        # The header's value is read by the collector at start, never written to the template
        assert "secretsmanager:GetSecretValue" in actions_on(role_statements(otlp_url, function), f":secret:{secret}")


def config_of(**context: Any) -> PlatformConfig:
    return PlatformConfig.from_context(context.get)


def test_the_keys_rules() -> None:
    assert config_of().otlp_endpoint is None
    assert config_of(otlp_endpoint="xray").otlp_endpoint == "xray"  # with DAX: X-Ray has an endpoint in the VPC
    url = config_of(otlp_endpoint="https://otlp.example.com:4318", dax="false", otlp_headers=["a-key", "b"],
                    otlp_headers_secret="arn:aws:secretsmanager:eu-west-1:123456789012:secret:otlp-AbCdEf")  # fmt: skip
    assert url.otlp_headers == ("a-key", "b")
    refused = [
        ({"otlp_endpoint": "https://otlp.example.com"}, "dax=true"),  # no route out of the DAX VPC
        ({"otlp_endpoint": "http://otlp.example.com", "dax": "false"}, "https URL"),
        ({"otlp_endpoint": "honeycomb", "dax": "false"}, "https URL"),
        ({"otlp_headers": "a"}, "otlp_endpoint"),
        ({"otlp_endpoint": "xray", "otlp_headers": "a", "otlp_headers_secret": "s"}, "signed"),
        ({"otlp_endpoint": "https://o.example.com", "dax": "false", "otlp_headers": "a"}, "otlp_headers_secret"),
        ({"otlp_endpoint": "https://o.example.com", "dax": "false", "otlp_headers_secret": "s"}, "otlp_headers_secret"),
        ({"otlp_endpoint": "https://o.example.com", "dax": "false", "otlp_headers": "a b", "otlp_headers_secret": "s"},
         "header names"),
    ]  # fmt: skip
    for context, message in refused:
        with pytest.raises(ContextError, match=message):
            config_of(**context)


def test_synth_fails_with_a_url_and_dax(tmp_path: Path) -> None:
    with pytest.raises(ContextError, match="otlp_endpoint"):
        synthesize(tmp_path, {"otlp_endpoint": "https://otlp.example.com"})
