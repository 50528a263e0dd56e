"""`python -m local` as a subprocess on free loopback ports, for end-to-end tests.

Every wait is bounded by a deadline; the subprocess is always stopped with SIGINT, as a user's
Ctrl-C would stop it, and must then exit 0.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tests.support.aws import client, free_port
from tests.support.features import PLATFORM_TOOLS_DIR

ROOT = Path(__file__).resolve().parents[2]
START_DEADLINE_S = 120
T = TypeVar("T")


@dataclass
class LocalPlatform:
    mcp_url: str
    aws_url: str
    api_key: str
    startup_s: float
    log_path: Path
    log_dir: Path  # its LOCAL_LOG_DIR: where it saved its operations environment
    process: subprocess.Popen[bytes] | None = None

    def aws(self, service: str) -> Any:
        return client(service, self.aws_url)

    def kill(self) -> None:
        """SIGKILL, as Lambda ends an environment: no handler, no flush, nothing after it runs."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def local_ops(self, *args: str, timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
        """`python -m local.ops <args>` against this platform, as a user runs it beside `make dev`."""
        env = {**os.environ, "LOCAL_AWS_PORT": self.aws_url.rsplit(":", 1)[1], "LOCAL_LOG_DIR": str(self.log_dir)}
        env.pop("MCP_API_KEY", None)
        command = [sys.executable, "-m", "local.ops", *args]
        return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)


def wait_for(probe: Callable[[], T | None], deadline_s: float, what: str) -> T:
    deadline = time.monotonic() + deadline_s
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {deadline_s} s waiting for {what}")
        time.sleep(0.25)


@contextlib.contextmanager
def local_platform(
    log_dir: Path, env: Mapping[str, str] | None = None, args: Sequence[str] = ()
) -> Iterator[LocalPlatform]:
    """The whole local platform, healthy, with a fixed API key, serving the platform's own tools
    (tests/support/platform_tools) unless ``env`` names another ``MCP_FEATURES_DIR``; ``env`` adds
    settings, ``args`` command-line options (e.g. ``--fixtures conformance``)."""
    mcp_port, aws_port = free_port(), free_port()
    api_key = f"mcpk_e2e_{uuid.uuid4().hex}"
    full_env = {**os.environ, "MCP_PORT": str(mcp_port), "LOCAL_AWS_PORT": str(aws_port), "MCP_API_KEY": api_key}
    full_env["MCP_FEATURES_DIR"] = str(PLATFORM_TOOLS_DIR)
    full_env.pop("MCP_AUTH", None)
    full_env["LOCAL_LOG_DIR"] = str(log_dir)  # the endpoint log files beside the platform's log
    full_env.update(env or {})
    log_path = log_dir / "platform.log"
    started = time.monotonic()
    with log_path.open("w") as log:
        process = subprocess.Popen(  # a process group of its own, for LocalPlatform.kill
            [sys.executable, "-m", "local", *args],
            cwd=ROOT,
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:

        def healthy() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"python -m local exited {process.returncode}:\n{log_path.read_text()[-4000:]}")
            try:
                return httpx.get(f"http://127.0.0.1:{mcp_port}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False  # not listening yet: keep polling until the deadline

        wait_for(healthy, START_DEADLINE_S, "the endpoint's /healthz")
        startup = time.monotonic() - started
        mcp_url, aws_url = f"http://127.0.0.1:{mcp_port}/mcp", f"http://127.0.0.1:{aws_port}"
        yield LocalPlatform(mcp_url, aws_url, api_key, startup, log_path, Path(full_env["LOCAL_LOG_DIR"]), process)
    finally:
        # Killed by the test (LocalPlatform.kill): there is no clean exit to check.
        killed = process.returncode == -signal.SIGKILL
        if not killed and process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
            raise AssertionError(f"python -m local ignored SIGINT:\n{log_path.read_text()[-4000:]}") from None
    if killed:
        return
    output = log_path.read_text()
    assert code == 0, f"exit code {code} after SIGINT:\n{output[-4000:]}"
    assert "stopped" in output
