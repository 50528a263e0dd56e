"""moto-backed AWS for tests: a ThreadedMotoServer on a free loopback port, and the tables.

moto's DynamoDB backend evaluates a condition and applies the write as separate Python steps
with no lock, so two concurrent requests on one item can interleave inside moto (seen: a lost
``list_append`` and a lost version-checked update, a few runs in ten). Real DynamoDB applies
each single-item write (and each transaction) atomically. :class:`AtomicMotoServer` restores
that by running one request at a time; races *between* requests (read, then write) stay
possible, which is what the concurrency tests and their unlocked controls exercise.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import boto3
from botocore.config import Config
from moto.moto_server.threaded_moto_server import MotoRequestHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

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


class AtomicMotoServer(ThreadedMotoServer):
    """ThreadedMotoServer whose requests each run atomically (one at a time)."""

    def _server_entry(self) -> None:
        app = DomainDispatcherApplication(create_backend_app)
        lock = threading.Lock()

        def atomic(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            with lock:
                return list(app(environ, start_response))

        self._server = make_server(self._ip_address, self._port, atomic, True, request_handler=MotoRequestHandler)
        self._server_ready_event.set()
        self._server.serve_forever()


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """Start an AtomicMotoServer on 127.0.0.1 and yield its endpoint URL."""
    port = free_port()
    server = AtomicMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
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
