"""moto-backed AWS for tests: an atomic moto server on a free loopback port, and the tables.

The server is the local platform's AtomicMotoServer (see local/atomic_moto.py for why).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any, cast

import boto3
from botocore.config import Config

from local.atomic_moto import AtomicMotoServer
from local.functions import environment

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


def set_fake_aws_env(monkeypatch: Any) -> None:
    """Dummy credentials for one test (pytest's monkeypatch undoes it); no endpoint or
    profile from the shell may leak in, and nothing probes the instance-metadata address."""
    for name, value in FAKE_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)


def fake_credentials() -> contextlib.AbstractContextManager[None]:
    """Dummy credentials for the duration of a test (never in the shell environment)."""
    return environment(FAKE_CREDENTIALS)


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
    return cast(Any, boto3).client(
        service,
        region_name=REGION,
        endpoint_url=endpoint_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"max_attempts": 1}),
    )
