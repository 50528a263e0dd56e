"""A ThreadedMotoServer on 127.0.0.1 (free port) for the session store's concurrency tests.

moto's DynamoDB backend evaluates a condition and applies an update as separate Python steps
with no lock, so two concurrent requests on one item can interleave inside moto (seen here:
a lost ``list_append`` and a lost version-checked update, a few runs in ten). Real DynamoDB
applies each single-item write atomically. :class:`AtomicMotoServer` restores that guarantee
by running one request at a time; races *between* requests (read, then write) stay possible,
which is exactly what the unlocked control demonstrates.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from moto.moto_server.threaded_moto_server import MotoRequestHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server


class AtomicMotoServer(ThreadedMotoServer):
    """ThreadedMotoServer whose requests each run atomically (one at a time), like DynamoDB's
    per-item writes. Threaded HTTP handling and concurrent clients are unchanged."""

    def _server_entry(self) -> None:
        app = DomainDispatcherApplication(create_backend_app)
        lock = threading.Lock()

        def atomic(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            with lock:
                return list(app(environ, start_response))

        self._server = make_server(self._ip_address, self._port, atomic, True, request_handler=MotoRequestHandler)
        self._server_ready_event.set()
        self._server.serve_forever()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials, only inside tests; never probe the instance-metadata address."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def moto_url(aws_env: None) -> Iterator[str]:
    port = _free_port()
    server = AtomicMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
