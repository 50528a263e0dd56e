"""The MCP Inspector's web UI (``@modelcontextprotocol/inspector``, pinned in package.json) on free
loopback ports, and the headless browser that drives it (``local/clients/inspector_oauth.mjs``).

The Inspector is two servers: the UI (``CLIENT_PORT``) and its proxy (``SERVER_PORT``), which the
UI's requests to the MCP server, OAuth discovery, registration and token included, go through.
The proxy requires its session token, passed here in the UI's URL as ``npx`` would print it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import httpx

from local.conformance.suite import NODE_BIN, suite_environment
from tests.support.aws import free_port
from tests.support.local_platform import ROOT, wait_for

INSPECTOR_CLI = ROOT / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli" / "build" / "cli.js"
BROWSER_DRIVER = ROOT / "local" / "clients" / "inspector_oauth.mjs"
START_DEADLINE_S = 60
STOP_DEADLINE_S = 10


@dataclass(frozen=True)
class Inspector:
    url: str
    """The UI's address with the proxy's address and session token, for a browser to open."""
    log_path: Path


def chromium_path() -> Path:
    """The system Chromium (``make test`` installs Debian's package when it is missing)."""
    path = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    if not os.access(path, os.X_OK):
        raise AssertionError(f"no Chromium at {path}: `make browser` installs it, or set CHROMIUM to one")
    return path


@contextlib.contextmanager
def inspector_web_ui(log_dir: Path) -> Iterator[Inspector]:
    """``npx @modelcontextprotocol/inspector`` (no server command: the person picks one in the UI)."""
    if not INSPECTOR_CLI.is_file():
        raise AssertionError(f"{INSPECTOR_CLI} is missing: run `make setup` (npm ci)")
    client_port, proxy_port, token = free_port(), free_port(), secrets.token_hex(16)
    ui, proxy = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{proxy_port}"
    env = suite_environment()  # the Inspector needs Node 22; its launcher starts `node` from PATH
    env.update(
        HOST="127.0.0.1",
        CLIENT_PORT=str(client_port),
        SERVER_PORT=str(proxy_port),
        MCP_PROXY_AUTH_TOKEN=token,
        ALLOWED_ORIGINS=ui,
        MCP_AUTO_OPEN_ENABLED="false",
    )
    log_path = log_dir / "inspector.log"
    with log_path.open("w") as log:
        # A session of its own: the launcher starts the UI and the proxy as children, and a signal
        # to the launcher alone leaves them running.
        process = subprocess.Popen(
            [str(NODE_BIN / "node"), str(INSPECTOR_CLI)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:

        def up() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"the Inspector exited {process.returncode}:\n{log_path.read_text()[-4000:]}")
            try:
                return (
                    httpx.get(f"{proxy}/health", timeout=1).status_code == 200
                    and httpx.get(ui, timeout=1).status_code == 200
                )
            except httpx.HTTPError:
                return False  # not listening yet

        wait_for(up, START_DEADLINE_S, "the MCP Inspector's UI and proxy")
        # The proxy's full address, not MCP_PROXY_PORT: the UI keeps it in local storage, so it
        # survives the OAuth redirect back to /oauth/callback, which drops the query.
        query = urlencode({"MCP_PROXY_FULL_ADDRESS": proxy, "MCP_PROXY_AUTH_TOKEN": token})
        yield Inspector(url=f"{ui}/?{query}", log_path=log_path)
    finally:
        stop_group(process)


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGINT to the whole session, as Ctrl-C in its terminal would; SIGKILL to what is left.

    The launcher is not reaped before the SIGKILL: until then its id, which names the group,
    cannot be reused by another process."""
    if process.returncode is not None:
        return  # reaped already (it exited on its own, and the failure says so)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGINT)
    deadline = time.monotonic() + STOP_DEADLINE_S
    while time.monotonic() < deadline:
        if os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
            break
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=STOP_DEADLINE_S)
