"""Run an ASGI app under uvicorn in a background thread on a free loopback port, served as on Lambda."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import uvicorn

from mcp_platform.transport.serving import DEFAULT_LIMITS, HeaderLimits, server_config
from tests.support.aws import free_port


@contextlib.contextmanager
def serve(app: Any, port: int | None = None, limits: HeaderLimits = DEFAULT_LIMITS) -> Iterator[str]:
    """Yield the base URL (``http://127.0.0.1:PORT``) while the app is served with the server
    options of run.sh and the local platform (``limits``: shorter ones for a test)."""
    port = port or free_port()
    server = uvicorn.Server(server_config(app, host="127.0.0.1", port=port, limits=limits, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 10
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("server did not become ready")
        time.sleep(0.05)
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)
