"""An endpoint served on loopback against a moto server, and the official SDK client for it."""

from __future__ import annotations

import contextlib
import json
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
from mcp_platform.bootstrap.endpoint import build_app
from mcp_platform.config import Settings
from mcp_platform.transport.serving import DEFAULT_LIMITS, HeaderLimits
from tests.support import platform_tools
from tests.support.aws import client, fake_credentials, moto_server
from tests.support.servers import serve
from tests.support.tables import create_session_table
from tests.support.wire import WireRecorder


@dataclass
class AwsStack:
    endpoint_url: str
    table: str
    stream: str
    dlq_url: str
    state_secret: str = ""
    """ARN of the request-state key secret every instance of the stack reads (2026 rounds)."""

    def client(self, service: str) -> Any:
        return client(service, self.endpoint_url)

    def settings(self, **overrides: str) -> Settings:
        env = {
            "SESSION_TABLE_NAME": self.table,
            "EVENT_STREAM_NAME": self.stream,
            "PRODUCER_DLQ_URL": self.dlq_url,
            "AWS_REGION": "us-east-1",
            "MCP_KEEPALIVE_SECONDS": "1",
            "MCP_STREAM_MAX_SECONDS": "20",
            "MCP_MAX_REQUEST_BYTES": "65536",
            "MCP_REQUEST_STATE_SECRET_ARN": self.state_secret,
        }
        env.update(overrides)
        return Settings.from_mapping(env)


@dataclass
class Instance:
    url: str
    recorder: WireRecorder

    @property
    def endpoint(self) -> Any:
        """The McpEndpoint behind the recorder (its store, runner, ...)."""
        return self.recorder.app


def fresh_stack() -> Iterator[AwsStack]:
    """A fresh emulator with fake credentials, for a module whose tests must not see each other's
    writes: declared there as ``aws = pytest.fixture(fresh_stack, name="aws")``."""
    with fake_credentials(), aws_stack() as stack:
        yield stack


def alice_and_bob(aws: AwsStack) -> dict[str, str]:
    """API keys of two principals on the stack's table (``pytest.fixture(alice_and_bob, name="keys")``)."""
    store = ApiKeyStore(aws.table, aws.client("dynamodb"))
    return {"alice": store.mint("alice"), "bob": store.mint("bob")}


@contextlib.contextmanager
def aws_stack() -> Iterator[AwsStack]:
    """A moto server with the session table, the event stream, the producer DLQ and the
    request-state key secret."""
    with moto_server() as endpoint_url:
        suffix = uuid.uuid4().hex[:8]
        stack = AwsStack(endpoint_url, f"sessions-{suffix}", f"events-{suffix}", "")
        create_session_table(stack.client("dynamodb"), stack.table)
        stack.client("kinesis").create_stream(StreamName=stack.stream, ShardCount=1)
        stack.dlq_url = stack.client("sqs").create_queue(QueueName=f"producer-dlq-{suffix}")["QueueUrl"]
        keys = json.dumps({"current": "k1", "k1": secrets.token_urlsafe(48)})
        created = stack.client("secretsmanager").create_secret(Name=f"request-state-{suffix}", SecretString=keys)
        stack.state_secret = created["ARN"]
        yield stack


@contextlib.contextmanager
def endpoint_instance(
    aws: AwsStack,
    port: int | None = None,
    extra_tools: tuple[Any, ...] = (),
    dynamodb: Any | None = None,
    dax: Any | None = None,
    limits: HeaderLimits = DEFAULT_LIMITS,
    **overrides: str,
) -> Iterator[Instance]:
    """``dynamodb``: the instance's own client (e.g. one with fault-injecting event hooks);
    ``dax``: an item cache the instance reads and writes items through (the DAX stand-in);
    ``limits``: the served stack's header limits (shorter ones for a test)."""
    app = build_app(
        aws.settings(**overrides),
        platform_tools,
        *extra_tools,
        dynamodb=dynamodb or aws.client("dynamodb"),
        kinesis=aws.client("kinesis"),
        sqs=aws.client("sqs"),
        secretsmanager=aws.client("secretsmanager"),
        port=port,
        dax=dax,
    )
    recorder = WireRecorder(app)
    with serve(recorder, port, limits) as base:
        yield Instance(f"{base}/mcp", recorder)


def sdk_client(url: str, key: str, mode: str, **options: Any) -> Client:
    """The official SDK client over Streamable HTTP with a bearer key; ``options`` are the
    Client's own (e.g. ``elicitation_callback``)."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http), mode=mode, **options)
