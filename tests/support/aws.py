"""moto-backed AWS for tests: a ThreadedMotoServer on a free loopback port, and the tables."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from typing import Any

import boto3
from botocore.config import Config
from mcp_platform import table_schema as ts

REGION = "us-east-1"
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def fake_credentials() -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in FAKE_CREDENTIALS}
    os.environ.update(FAKE_CREDENTIALS)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """Start a ThreadedMotoServer on 127.0.0.1 and yield its endpoint URL."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def client(service: str, endpoint_url: str) -> Any:
    """A client for the moto server: no retries, so a moto 500 is seen, not hidden."""
    return boto3.client(
        service,
        region_name=REGION,
        endpoint_url=endpoint_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 1}),
    )


def create_session_table(dynamodb: Any, name: str) -> None:
    """The session table as the data construct declares it (D1, D8, D9)."""
    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": ts.PK, "AttributeType": "S"},
            {"AttributeName": ts.SK, "AttributeType": "S"},
            {"AttributeName": ts.STATUS, "AttributeType": "S"},
            {"AttributeName": ts.TTL, "AttributeType": "N"},
        ],
        KeySchema=[{"AttributeName": ts.PK, "KeyType": "HASH"}, {"AttributeName": ts.SK, "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": ts.STATUS_TTL_INDEX,
                "KeySchema": [
                    {"AttributeName": ts.STATUS, "KeyType": "HASH"},
                    {"AttributeName": ts.TTL, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
