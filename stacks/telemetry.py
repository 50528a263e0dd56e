"""Optional span export (context key ``otlp_endpoint``): the OpenTelemetry collector extension on
every function, configured to forward spans to X-Ray or to any OTLP/HTTP backend.

Off (the default) nothing here is built: no layer, no variable, and the functions import nothing
of it (``mcp_platform.bootstrap.telemetry``). On, each of the four functions gets:

* the OpenTelemetry project's collector layer (open-telemetry/opentelemetry-lambda, published in
  every commercial region by account 184161586896, one per architecture and release). It runs as a
  Lambda extension: an OTLP receiver on ``localhost:4318`` and an exporter that sends after the
  response, holding the environment only until the export is done (its ``decouple`` processor);
* ``OPENTELEMETRY_COLLECTOR_CONFIG_URI``: the collector's configuration itself, inline (its ``yaml:``
  scheme; JSON is YAML), so the template states exactly what is sent where;
* ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``: the receiver's URL, which switches the platform's own
  span recording on (``mcp_platform.application.spans``).

Why the platform writes its spans itself rather than through the OpenTelemetry Python layer: the
endpoint's ``AWS_LAMBDA_EXEC_WRAPPER`` is the Web Adapter's (the Python layer's wrapper needs it too),
and its spans would be of Lambda's invocation, not of the MCP requests whose ids the log lines carry.

``xray``: X-Ray's OTLP endpoint, requests signed with the function's role (``sigv4auth``); it takes
``xray:PutTraceSegments``, which Lambda tracing grants already (either mode), and needs CloudWatch Transaction
Search enabled in the account. An https URL: any OTLP/HTTP backend, with the headers named in
``otlp_headers`` read by the collector at start from the JSON secret ``otlp_headers_secret``. With
``dax=true`` the endpoint and the worker run in isolated subnets, which reach X-Ray and Secrets
Manager through their interface endpoints but nothing outside AWS, so a URL needs ``dax=false``.
"""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from mcp_platform.config import EnvVars
from stacks.config import OTLP_XRAY, PlatformConfig

COLLECTOR_ACCOUNT = "184161586896"  # the OpenTelemetry project's public Lambda layers
COLLECTOR_RELEASE = "0.23.0"  # github.com/open-telemetry/opentelemetry-lambda, tag layer-collector/0.23.0
COLLECTOR_CONFIG_VARIABLE = "OPENTELEMETRY_COLLECTOR_CONFIG_URI"  # read by the collector extension
RECEIVER = "localhost:4318"
TRACES_URL = f"http://{RECEIVER}/v1/traces"
REGION = "${env:AWS_REGION}"  # expanded by the collector in its environment (the function's region)


def collector_layer_arn(region: str, config: PlatformConfig) -> str:
    architecture = "arm64" if config.architecture == "arm64" else "amd64"
    version = COLLECTOR_RELEASE.replace(".", "_")
    return f"arn:aws:lambda:{region}:{COLLECTOR_ACCOUNT}:layer:opentelemetry-collector-{architecture}-{version}:1"


def collector_config(config: PlatformConfig) -> dict[str, Any]:
    """The collector's configuration: spans in over OTLP/HTTP on loopback, out to the backend."""
    extensions: dict[str, Any] = {}
    if config.otlp_endpoint == OTLP_XRAY:
        extensions["sigv4auth"] = {"region": REGION, "service": "xray"}
        exporter: dict[str, Any] = {
            "traces_endpoint": f"https://xray.{REGION}.amazonaws.com/v1/traces",
            "auth": {"authenticator": "sigv4auth"},
        }
    else:
        exporter = {"endpoint": config.otlp_endpoint}
        if config.otlp_headers:
            secret = config.otlp_headers_secret
            exporter["headers"] = {name: f"${{secretsmanager:{secret}#{name}}}" for name in config.otlp_headers}
    service: dict[str, Any] = {
        # decouple: the function's POST returns at once; the export runs after the response.
        "pipelines": {"traces": {"receivers": ["otlp"], "processors": ["decouple"], "exporters": ["otlphttp"]}}
    }
    if extensions:
        service["extensions"] = list(extensions)
    return {
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": RECEIVER}}}},
        "processors": {"decouple": {}},
        "exporters": {"otlphttp": exporter},
        **({"extensions": extensions} if extensions else {}),
        "service": service,
    }


class Telemetry(Construct):
    """Built only with ``otlp_endpoint``; :meth:`attach` equips one function."""

    def __init__(self, scope: Construct, construct_id: str, *, config: PlatformConfig) -> None:
        super().__init__(scope, construct_id)
        arn = collector_layer_arn(Stack.of(self).region, config)
        self.layer = lambda_.LayerVersion.from_layer_version_arn(self, "Collector", arn)
        self.environment = {
            COLLECTOR_CONFIG_VARIABLE: "yaml:" + json.dumps(collector_config(config), separators=(",", ":")),
            EnvVars.OTLP_TRACES_ENDPOINT: TRACES_URL,
        }
        self.headers_secret = (
            _secret(self, config.otlp_headers_secret) if config.otlp_headers_secret is not None else None
        )

    def attach(self, function: lambda_.Function) -> None:
        function.add_layers(self.layer)
        for name, value in self.environment.items():
            function.add_environment(name, value)
        if self.headers_secret is not None:
            self.headers_secret.grant_read(function)  # the collector reads it at start, as the function


def _secret(scope: Construct, reference: str) -> secretsmanager.ISecret:
    if reference.startswith("arn:"):
        return secretsmanager.Secret.from_secret_complete_arn(scope, "HeadersSecret", reference)
    return secretsmanager.Secret.from_secret_name_v2(scope, "HeadersSecret", reference)
