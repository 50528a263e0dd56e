"""Two endpoint instances on one emulator, started the documented way.

The first is ``python -m local --fixtures conformance`` (emulator, pollers, endpoint), the second
``python -m local --attach --fixtures conformance``: separate processes, so nothing one instance
keeps in memory can help the other, as between two Lambda execution environments. Both run with
``MCP_AUTH=none`` on loopback (the suite cannot send headers) and accept the Host names of the
proxy in front of them.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

from local.bootstrap import LOOPBACK, ROOT

logger = logging.getLogger(__name__)
START_TIMEOUT_S = 180.0  # a cold start synthesizes the template (about 10 s here)
STOP_TIMEOUT_S = 15.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


@dataclass
class Instance:
    name: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    log: IO[bytes]

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError as error:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name} not ready in {timeout_s:.0f} s:\n{self.log_tail()}") from error
            time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM (the platform's clean stop), then SIGKILL if it does not exit in time."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                logger.warning("%s did not stop in %.0f s: killed", self.name, STOP_TIMEOUT_S)
                self.process.kill()
                self.process.wait(STOP_TIMEOUT_S)
        self.log.close()

    def log_tail(self, lines: int = 40) -> str:
        self.log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def start_instance(
    name: str,
    port: int,
    aws_port: int,
    allowed_hosts: Sequence[str],
    log_dir: Path,
    *,
    settings: Mapping[str, str] | None = None,
    fixtures: Sequence[str] = ("conformance",),
) -> Instance:
    """``settings``: environment beyond the defaults (the authorization scenarios' OAuth facade)."""
    attach = name != "a"
    command = [sys.executable, "-m", "local", *(["--attach"] if attach else [])]
    command += [argument for fixture in fixtures for argument in ("--fixtures", fixture)]
    env = {
        **os.environ,
        "MCP_AUTH": "none",
        "MCP_PORT": str(port),
        "LOCAL_AWS_PORT": str(aws_port),
        "MCP_ALLOWED_HOSTS": ",".join(allowed_hosts),
        "LOCAL_HEALTH_SECONDS": "0",
        "PYTHONUNBUFFERED": "1",
        "LOCAL_LOG_DIR": str(log_dir),  # the endpoint log files beside the instances' logs
        **(settings or {}),
    }
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"instance-{name}.log"
    log = log_path.open("wb")
    logger.info("starting instance %s: %s (MCP_PORT=%d)", name, " ".join(command[1:]), port)
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603 - our module
    return Instance(name, port, process, log_path, log)
