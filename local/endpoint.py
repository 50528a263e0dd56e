"""The endpoint: the Lambda's ASGI app (build_app + the mcp_tools package) on uvicorn in a thread."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import uvicorn

from local.bootstrap import LOOPBACK


class EndpointServer:
    def __init__(self, app: Any, port: int) -> None:
        self.port = port
        # Imported here, not at the top: the layer is importable only once the import roots are
        # set (python -m local sets them after isolating the process from real AWS).
        from mcp_platform.transport.serving import server_config

        # The server options of run.sh on Lambda, from their one definition.
        config = server_config(app, host=LOOPBACK, port=port, log_level="warning")
        self._server = uvicorn.Server(config)
        # Not the main thread: uvicorn then leaves SIGINT/SIGTERM to the platform's handler.
        self._thread = threading.Thread(target=self._server.run, name="uvicorn", daemon=True)

    def start(self, timeout_s: float = 30.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        url = f"http://{LOOPBACK}:{self.port}/healthz"
        while True:
            try:
                if httpx.get(url, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError as error:
                if not self._thread.is_alive():
                    raise RuntimeError(f"uvicorn exited before serving on port {self.port}") from error
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the endpoint did not answer {url} within {timeout_s:.0f} s") from error
            time.sleep(0.05)

    def stop(self, timeout_s: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout_s)
