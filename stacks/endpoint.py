"""Endpoint: the streaming MCP function behind its Function URL, or API Gateway with edge=api_gateway (S1, S8)."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from mcp_platform.config import EnvVars
from stacks.app_resources import CODE_EXCLUDES
from stacks.cloudfront_edge import OriginVerifySecret
from stacks.cognito import CognitoAuthorization
from stacks.common import APPLICATION_LOG_LEVEL, function_telemetry, log_group
from stacks.config import PlatformConfig
from stacks.data import Data
from stacks.dax import DaxCache
from stacks.deployment import live_alias
from stacks.network import Network
from stacks.oauth_facade import OAuthFacade
from stacks.request_state import RequestStateKey
from stacks.runtime import architecture_of, lambda_runtime, web_adapter_layer_arn
from stacks.stream import EventStream

ROOT = Path(__file__).resolve().parent.parent
FUNCTION_TIMEOUT_S = 900  # the Lambda maximum: long SSE streams (S7)
STREAM_MAX_S = 840  # S7: the server ends a stream well before Lambda would kill it
KEEPALIVE_S = 15
LWA_PORT = "8080"
MEMORY_MB = 1024  # CPU scales with memory: keeps cold start and TTFB (S4) low; make bench prices it
# Read by the Web Adapter's request library, not by the platform (see the environment below).
IGNORE_STAGE_IN_PATH = "AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH"
SERVICE_NAME = "mcp-endpoint"
METRICS_NAMESPACE = "McpPlatform"
MCP_HEADERS = ["content-type", "authorization", "accept", "mcp-session-id", "mcp-protocol-version",
               "last-event-id", "mcp-method", "mcp-name"]  # fmt: skip


class Endpoint(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: PlatformConfig,
        layer: lambda_.ILayerVersion,
        data: Data,
        stream: EventStream,
        producer_dlq: sqs.IQueue,
        network: Network | None,
        dax: DaxCache | None,
        cognito: CognitoAuthorization | None = None,
        request_state: RequestStateKey | None = None,
        facade: OAuthFacade | None = None,
        origin_verify: OriginVerifySecret | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        region = Stack.of(self).region
        environment = {
            # S1: the Web Adapter starts run.sh, waits for the readiness path, then streams.
            "AWS_LAMBDA_EXEC_WRAPPER": "/opt/bootstrap",
            "AWS_LWA_INVOKE_MODE": "response_stream",  # must match the URL's InvokeMode
            "AWS_LWA_READINESS_CHECK_PATH": "/healthz",
            "AWS_LWA_PORT": LWA_PORT,
            EnvVars.STAGE: config.stage,
            EnvVars.SESSION_TABLE: data.session_table.table_name,
            EnvVars.AUDIT_TABLE: data.audit_table.table_name,  # session_audit tool reads trails
            EnvVars.DAX_ENDPOINT: dax.endpoint_url if dax else "",  # X5: empty = DAX off
            EnvVars.EVENT_STREAM: stream.stream.stream_name,
            EnvVars.EVENT_STREAM_ARN: stream.stream.stream_arn,
            EnvVars.PRODUCER_DLQ_URL: producer_dlq.queue_url,
            EnvVars.SESSION_TTL_SECONDS: str(config.session_ttl_seconds),
            EnvVars.COMPATIBLE_WITH: config.compatible_with,
            EnvVars.AUTH_MODE: config.auth_mode,
            EnvVars.ALLOWED_ORIGINS: ",".join(config.browser_origins),
            EnvVars.STREAM_MAX_SECONDS: str(STREAM_MAX_S),
            EnvVars.KEEPALIVE_SECONDS: str(KEEPALIVE_S),
            # Off: no stream, no subscribe method, no listChanged advertised; no cost.
            EnvVars.SUBSCRIPTIONS: "true" if config.subscriptions else "false",
            EnvVars.SERVICE_NAME: SERVICE_NAME,
            EnvVars.METRICS_NAMESPACE: METRICS_NAMESPACE,
            EnvVars.LOG_LEVEL: APPLICATION_LOG_LEVEL,
            # The secret's ARN only: the function reads the key on first use (interactive/keys.py).
            # G2 (optional): the quotas admission checks against the usage ingest keeps in the session table.
            **({EnvVars.QUOTAS: config.quotas} if config.quotas is not None else {}),
            **({EnvVars.REQUEST_STATE_SECRET: request_state.secret.secret_arn} if request_state else {}),
            **self._oauth_environment(config, cognito),
            **(facade.environment() if facade is not None else {}),
            **(origin_verify.environment() if origin_verify is not None else {}),
            # API Gateway's REST events: the Web Adapter hands the app the event's path (no stage in
            # it); this keeps the adapter's request library from prefixing the stage to its URI too.
            **({IGNORE_STAGE_IN_PATH: "true"} if config.edge == "api_gateway" else {}),
        }
        vpc_props = network.function_placement() if network is not None else {}
        self.environment = dict(environment)  # what the task worker's function starts from
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=lambda_runtime(config),
            architecture=architecture_of(config),
            handler="run.sh",
            code=lambda_.Code.from_asset(str(ROOT / "functions" / "endpoint"), exclude=CODE_EXCLUDES),
            layers=[
                layer,
                lambda_.LayerVersion.from_layer_version_arn(self, "WebAdapter", web_adapter_layer_arn(region, config)),
            ],
            memory_size=MEMORY_MB,
            timeout=Duration.seconds(FUNCTION_TIMEOUT_S),
            environment=environment,
            # Unset by default; set, a request flood cannot take the pipeline functions' concurrency.
            reserved_concurrent_executions=config.endpoint_reserved_concurrency,
            log_group=log_group(self, "Logs", config),
            **function_telemetry(config),  # JSON logs, Lambda's own lines and X-Ray per context
            description="MCP streamable-HTTP endpoint (Lambda Web Adapter + uvicorn)",
            **vpc_props,  # type: ignore[arg-type]
        )
        fn = self.function
        data.session_table.grant_read_write_data(fn)  # sessions, API keys (hashed)
        data.audit_table.grant_read_data(fn)  # A3: audit trails are queryable by session
        stream.stream.grant_write(fn)
        stream.stream.grant_read(fn)  # K4: the recent_tool_events tool reads its session's shard
        producer_dlq.grant_send_messages(fn)  # K2: what PutRecords retries could not deliver
        if dax is not None:
            dax.grant_client(fn)
        if request_state is not None:
            request_state.grant_read(fn)  # 2026 requestState keys: this secret only, read only
        if facade is not None:
            facade.grant(fn)  # the facade's signing seeds and its upstream client's secret
        if origin_verify is not None:
            origin_verify.grant_read(fn)  # the values CloudFront's requests must carry

        # What every invoker of the endpoint invokes (the Function URL; API Gateway's integration with
        # edge=api_gateway): CodeDeploy shifts it between versions.
        self.alias = live_alias(fn, provisioned_concurrency=config.endpoint_provisioned_concurrency)
        # S1 streaming URL (not with edge=api_gateway: API Gateway invokes the alias itself, and a
        # URL would be a way around it). Auth type NONE: the app authenticates every request itself
        # (bearer API keys / OAuth, default deny), which IAM auth could not express for MCP clients;
        # behind CloudFront it also refuses requests without the origin-verify header.
        self.url = (
            self.alias.add_function_url(
                auth_type=lambda_.FunctionUrlAuthType.NONE,
                invoke_mode=lambda_.InvokeMode.RESPONSE_STREAM,
                cors=self._cors(config),
            )
            if config.edge != "api_gateway"
            else None
        )

    @staticmethod
    def _oauth_environment(config: PlatformConfig, cognito: CognitoAuthorization | None) -> dict[str, str]:
        """No MCP_OAUTH_AUDIENCE unless configured: the function derives it from its Function URL
        (its own URL cannot be named here without a circular reference, see auth/resource.py)."""
        if "oauth" not in config.auth_mode.split(","):
            return {}
        environment = {
            EnvVars.OAUTH_ISSUER: cognito.issuer if cognito else config.oauth_issuer,
            # Behind an edge with a custom domain, the resource is the public URL (its origin the
            # facade's issuer); unset with neither, derived per request from the Function URL.
            EnvVars.OAUTH_AUDIENCE: config.oauth_audience or config.public_url or "",
            EnvVars.OAUTH_SCOPES: " ".join(config.oauth_scopes),
            EnvVars.OAUTH_JWKS_URL: cognito.jwks_url if cognito else config.oauth_jwks_url,
            EnvVars.OAUTH_CLIENT_IDS: ",".join(config.oauth_client_ids),
        }
        if config.oauth_tenant_claim:
            environment[EnvVars.OAUTH_TENANT_CLAIM] = config.oauth_tenant_claim
        if cognito is not None:  # Cognito access tokens have no aud: bound by the app client
            machine = [cognito.machine_client.user_pool_client_id] if cognito.machine_client is not None else []
            environment[EnvVars.OAUTH_CLIENT_IDS] = ",".join(
                [*config.oauth_client_ids, cognito.client.user_pool_client_id, *machine]
            )
            if machine:  # machines may use client_credentials: the extension is advertised
                environment[EnvVars.OAUTH_CLIENT_CREDENTIALS] = "true"
        return {name: value for name, value in environment.items() if value}

    @staticmethod
    def _cors(config: PlatformConfig) -> lambda_.FunctionUrlCorsOptions | None:
        """S8: an explicit allow-list; no origins configured = no CORS (browsers are refused)."""
        if not config.browser_origins:
            return None
        return lambda_.FunctionUrlCorsOptions(
            allowed_origins=list(config.browser_origins),
            allowed_methods=[lambda_.HttpMethod.GET, lambda_.HttpMethod.POST, lambda_.HttpMethod.DELETE],
            allowed_headers=MCP_HEADERS,
            exposed_headers=["mcp-session-id", "www-authenticate"],
            max_age=Duration.hours(1),
        )
