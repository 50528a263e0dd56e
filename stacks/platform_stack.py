"""The platform stack: composes one construct per concern, as the architecture wires them."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack, Tags
from aws_cdk import aws_certificatemanager as acm
from constructs import Construct

from mcp_platform.config import EnvVars
from stacks.api_gateway_edge import ApiGatewayEdge
from stacks.app_resources import AppResources
from stacks.cloudfront_edge import CloudFrontEdge, OriginVerifySecret
from stacks.cognito import CognitoAuthorization
from stacks.common import dead_letter_queue, platform_key
from stacks.config import PlatformConfig
from stacks.data import Data
from stacks.dax import DaxCache
from stacks.deployment import RollbackAlarms, TrafficShifting
from stacks.endpoint import METRICS_NAMESPACE, SERVICE_NAME, Endpoint
from stacks.governance import Governance
from stacks.monitoring import Monitored, Monitoring
from stacks.network import Network
from stacks.oauth_facade import OAuthFacade, callback_url
from stacks.policies import check_policies
from stacks.processing import Processing
from stacks.request_state import RequestStateKey
from stacks.shared_layer import SharedLayer
from stacks.stream import EventStream
from stacks.tasks import TaskWorker
from stacks.telemetry import Telemetry


class PlatformStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: PlatformConfig,
        web_acl_arn: str | None = None,
        certificate: acm.ICertificate | None = None,
        **kwargs: Any,
    ) -> None:
        """``web_acl_arn``, ``certificate``: edge=cloudfront's web ACL and the certificate it
        creates for ``domain_name``, from its us-east-1 stack (stacks/edge_globals.py)."""
        super().__init__(scope, construct_id, **kwargs)
        Tags.of(self).add("project", "mcp-platform")
        Tags.of(self).add("stage", config.stage)
        self.config = config

        key = platform_key(self, "PlatformKey", config)
        self.data = Data(self, "Data", config=config, key=key)
        self.stream = EventStream(self, "Events", config=config, key=key)
        layer = SharedLayer(self, "SharedLayer", config=config).layer

        # X5: without DAX there is nothing in a VPC, so no VPC is built at all.
        self.network = Network(self, "Network", config=config) if config.dax else None
        self.dax = (
            DaxCache(self, "Dax", config=config, network=self.network, table=self.data.session_table)
            if self.network is not None
            else None
        )

        self.dlqs = {
            "Producer": dead_letter_queue(self, "ProducerDlq", key, config),  # K2 exhausted records
            "Ingest": dead_letter_queue(self, "IngestDlq", key, config),  # A1 for the Kinesis mapping
            "Audit": dead_letter_queue(self, "AuditDlq", key, config),  # A1 for the table stream
            "ExpiryEvents": dead_letter_queue(self, "ExpiryEventsDlq", key, config),  # A4 side effects
        }
        # OAuth 2.1 with a Cognito user pool as the authorization server (optional).
        self.cognito = CognitoAuthorization(self, "Authorization", config=config) if config.oauth_cognito else None
        # The authorization-server facade on the Function URL (every client can sign in).
        self.facade = (
            OAuthFacade(self, "OAuthFacade", config=config, key=key, cognito=self.cognito)
            if config.oauth_facade
            else None
        )
        # 2026 multi-round requests: every instance verifies every instance's requestState.
        self.request_state = RequestStateKey(self, "RequestState", config=config, key=key)
        check_policies()  # a bad policy fails synth, naming it (the function reads them at start)
        # edge=cloudfront: the header value that proves a request came through the distribution.
        self.origin_verify = (
            OriginVerifySecret(self, "OriginVerify", config=config, key=key) if config.edge == "cloudfront" else None
        )
        self.endpoint = Endpoint(
            self,
            "Endpoint",
            config=config,
            layer=layer,
            data=self.data,
            stream=self.stream,
            producer_dlq=self.dlqs["Producer"],
            network=self.network,
            dax=self.dax,
            cognito=self.cognito,
            request_state=self.request_state,
            facade=self.facade,
            origin_verify=self.origin_verify,
        )
        self.public_url = self._edge(config, web_acl_arn, certificate)
        # G1 rate limits (optional): the counters every instance admits against, at the endpoint only.
        self.governance = Governance(self, "Governance", config=config, key=key) if config.rate_limits else None
        if self.governance is not None:
            self.governance.admit_at(self.endpoint.function)
        # Tasks extension: long tool calls run durably in their own worker, fed by a queue.
        self.tasks = (
            TaskWorker(
                self,
                "Tasks",
                config=config,
                key=key,
                layer=layer,
                data=self.data,
                stream=self.stream,
                endpoint=self.endpoint,
                producer_dlq=self.dlqs["Producer"],
                network=self.network,
                dax=self.dax,
            )
            if config.tasks
            else None
        )
        # The app's own resources, granted to both functions that run its tools.
        self.app_resources = AppResources(
            self,
            "App",
            config=config,
            key=key,
            functions=[self.endpoint.function, *([self.tasks.function] if self.tasks else [])],
        )
        self.processing = Processing(
            self,
            "Processing",
            config=config,
            layer=layer,
            data=self.data,
            stream=self.stream,
            ingest_dlq=self.dlqs["Ingest"],
            audit_dlq=self.dlqs["Audit"],
            expiry_dlq=self.dlqs["ExpiryEvents"],
        )
        # Span export (optional, context key otlp_endpoint): the collector extension on every function.
        self.telemetry = Telemetry(self, "Telemetry", config=config) if config.otlp_endpoint else None
        if self.telemetry is not None:
            for function in (
                self.endpoint.function,
                *([self.tasks.function] if self.tasks else []),
                self.processing.ingest,
                self.processing.audit,
            ):
                self.telemetry.attach(function)
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            config=config,
            key=key,
            watched=Monitored(
                stream=self.stream,
                endpoint=self.endpoint.function,
                ingest=self.processing.ingest,
                audit=self.processing.audit,
                dlqs={**self.dlqs, **({"TaskWorker": self.tasks.dlq} if self.tasks else {})},
                task_worker=self.tasks.function if self.tasks else None,
                service_name=SERVICE_NAME,
                metrics_namespace=METRICS_NAMESPACE,
            ),
        )
        # Every function's live alias moves to its new version as `deployment` says, and back on an alarm.
        self.deployment = TrafficShifting(
            self,
            "Deployment",
            strategy=config.deployment,
            aliases={
                "Endpoint": self.endpoint.alias,
                "Ingest": self.processing.ingest_alias,
                "Audit": self.processing.audit_alias,
                **({"TaskWorker": self.tasks.alias} if self.tasks else {}),
            },
            alarms=RollbackAlarms(
                shared=[*self.monitoring.endpoint_alarms, *self.monitoring.dlq_alarms],
                own={name: [alarm] for name, alarm in self.monitoring.error_alarms.items()},
            ),
        )
        self._operations_output(config)

    def _edge(self, config: PlatformConfig, web_acl_arn: str | None, certificate: acm.ICertificate | None) -> str:
        """The edge in front of the endpoint (context key ``edge``); the endpoint's public URL."""
        url = self.endpoint.url
        self.cloudfront = (
            CloudFrontEdge(
                self,
                "Edge",
                config=config,
                url=url,
                origin_verify=self.origin_verify,
                web_acl_arn=web_acl_arn,
                certificate=certificate,
            )
            if config.edge == "cloudfront" and url is not None and self.origin_verify is not None
            else None
        )
        self.api_gateway = (
            ApiGatewayEdge(self, "Api", config=config, function=self.endpoint.alias)
            if config.edge == "api_gateway"
            else None
        )
        edge_url = next((e.url for e in (self.cloudfront, self.api_gateway) if e is not None), None)
        public = config.public_url or edge_url or (f"{url.url}mcp" if url is not None else "")
        CfnOutput(self, "McpEndpointUrl", value=public, description="MCP endpoint (POST/GET)")
        if self.facade is not None:
            # The facade's callback on each origin it is served on: the public one, and the
            # Function URL's while callers may reach it (edge=none).
            origins = [config.public_origin] if config.public_origin else []
            if config.edge == "none" and url is not None:
                origins.insert(0, url.url)
            self.facade.connect([callback_url(origin) for origin in origins])
        return public

    def _operations_output(self, config: PlatformConfig) -> None:
        """What the DLQ redrive command reads (python -m mcp_platform.ops --stack <name>): the
        queues, and the resources a replay writes to, under the functions' variable names; with
        governance on, the limits table and the quotas too."""
        environment = {
            EnvVars.SESSION_TABLE: self.data.session_table.table_name,
            EnvVars.AUDIT_TABLE: self.data.audit_table.table_name,
            EnvVars.EVENT_STREAM: self.stream.stream.stream_name,
            EnvVars.EVENT_RETENTION_HOURS: str(config.retention_hours),
            EnvVars.AUDIT_RETENTION_DAYS: str(config.audit_retention_days),
            EnvVars.PRODUCER_DLQ_URL: self.dlqs["Producer"].queue_url,
            EnvVars.INGEST_DLQ_URL: self.dlqs["Ingest"].queue_url,
            EnvVars.AUDIT_DLQ_URL: self.dlqs["Audit"].queue_url,
            EnvVars.EXPIRY_EVENTS_DLQ_URL: self.dlqs["ExpiryEvents"].queue_url,
        }
        if self.tasks is not None:
            environment[EnvVars.TASK_QUEUE_URL] = self.tasks.queue.queue_url
            environment[EnvVars.TASK_DLQ_URL] = self.tasks.dlq.queue_url
        if self.governance is not None:
            environment[EnvVars.LIMITS_TABLE] = self.governance.limits_table.table_name
        if config.quotas is not None:
            environment[EnvVars.QUOTAS] = config.quotas
        CfnOutput(
            self,
            "OperationsEnvironment",
            value=self.to_json_string(environment),
            description="queues and names for python -m mcp_platform.ops (DLQ redrive)",
        )
