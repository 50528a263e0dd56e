"""What the benchmark suites share: paths, the row shape, request builders, our app on fakes,
and the server command exactly as the endpoint function's run.sh starts it on Lambda."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT / "layers/platform/python", ROOT / "functions/endpoint", ROOT, ROOT / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

RUN_SH = ROOT / "functions/endpoint/run.sh"
BENCH_KEY = "bench-key"
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
BOTH = "application/json, text/event-stream"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def row(
    metric: str, ours: Any, peer: Any, unit: str, note: str, *, ratio: float | None = None, digits: int = 2
) -> dict[str, Any]:
    """One line of the table: our figure, the like-for-like peer's, ours/peer, what both do."""
    if ratio is None and isinstance(ours, int | float) and isinstance(peer, int | float) and peer:
        ratio = ours / peer
    return {
        "metric": metric,
        "ours": ours,
        "peer": peer if peer is not None else "-",
        "ratio": round(ratio, digits) if ratio is not None else "-",
        "unit": unit,
        "note": note,
    }


def p50_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def lambda_server_command(app: str, port: int) -> list[str]:
    """The endpoint's server command exactly as run.sh has it, after ``python3`` (the app and the
    port substituted): ``-m mcp_platform.transport.serving APP --host ... --port PORT``."""
    text = RUN_SH.read_text().replace("\\\n", " ")
    line = next(raw for raw in text.splitlines() if re.match(r"\s*exec\s", raw))
    words = shlex.split(line)
    args = words[words.index("-m") :]
    out: list[str] = []
    skip = False
    for word in args:
        if skip:
            skip = False
            continue
        if word == "--port":
            out += ["--port", str(port)]
            skip = True
        elif word.endswith(":app"):
            out.append(app)
        else:
            out.append(word)
    return out


def modern_call(request_id: int | str, name: str, arguments: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """A 2026-07-28 tools/call: the ``_meta`` envelope and its mirror headers (plain JSON)."""
    headers = {
        "accept": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": MODERN_META},
    }
    return headers, body


def modern_request(request_id: int | str, method: str, params: dict[str, Any] | None = None) -> tuple[dict, dict]:
    headers = {"accept": "application/json", "mcp-protocol-version": MODERN, "mcp-method": method}
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": MODERN_META}}
    return headers, body


def tool_call(request_id: int | str, name: str, arguments: dict[str, Any], meta: dict | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def our_app(
    *, auth: bool, dynamodb: Any = None, kinesis: Any = None, extra_tools: tuple = (), policies: str = ""
) -> Any:
    """Our endpoint on zero-latency fakes (or the given clients), serving the platform's own tools
    (tests/support/platform_tools, not the app's): auth ``api_key`` with the bench key minted, or
    ``none`` (loopback only). Blocking calls run as on Lambda (``INLINE``:
    one request per execution environment). Metric lines go to /dev/null through a real file:
    written and flushed as on Lambda (a write system call each, measured), not printed."""
    from fakes import FakeDynamo, FakeKinesis, FakeSqs

    from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
    from mcp_platform.application.blocking import INLINE
    from mcp_platform.bootstrap.endpoint import build_app
    from mcp_platform.config import Settings
    from tests.support import platform_tools

    dynamodb = dynamodb if dynamodb is not None else FakeDynamo()
    kinesis = kinesis if kinesis is not None else FakeKinesis()
    env = {"SESSION_TABLE_NAME": "bench", "EVENT_STREAM_NAME": "bench", "PRODUCER_DLQ_URL": "dlq"}
    if policies:  # a folder of *.cedar files (bench_endpoint.POLICY_RULES)
        env["MCP_POLICIES_DIR"] = policies
    if not auth:
        env["MCP_AUTH"] = "none"
    settings = Settings.from_mapping(env)
    if auth:
        ApiKeyStore("bench", dynamodb).mint("bench", key=BENCH_KEY)
    return build_app(
        settings,
        platform_tools,
        *extra_tools,
        dynamodb=dynamodb,
        kinesis=kinesis,
        sqs=FakeSqs(),
        metrics_stream=open(os.devnull, "w"),  # held by the app for its life
        blocking=INLINE,
    )


def callgrind_millions(script: Path, argument: str, *, cwd: str | Path, env: dict[str, str]) -> int:
    """Millions of instructions ``python script argument`` runs under valgrind's callgrind (what a
    busy machine cannot skew); 0 when valgrind is missing."""
    if shutil.which("valgrind") is None:
        return 0
    counted = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, str(script), argument],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    found = re.search(r"Collected : (\d+)", counted.stderr)
    if counted.returncode != 0 or found is None:
        raise RuntimeError(f"{argument}: {script.name} failed under callgrind:\n{counted.stderr[-3000:]}")
    return round(int(found.group(1)) / 1e6)
