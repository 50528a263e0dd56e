"""Endpoint benchmarks, ours against the official SDK's minimal server in the same run.

1. Cold start: process start -> /healthz 200 (min of several runs; ratio ours/peer).
2. CPU per tools/call: in-process ASGI with zero-latency fake AWS clients (p50, ratio).
3. AWS calls on a tools/call's critical path (counted, deterministic).
4. A 3 s tool streaming progress: time to headers and to the first progress event.
"""

from __future__ import annotations

import asyncio
import io
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT / "layers/platform/python", ROOT / "functions/endpoint", ROOT, ROOT / "bench"):
    sys.path.insert(0, str(extra))

from fakes import FakeDynamo, FakeKinesis, FakeSqs, asgi_post  # noqa: E402

COLD_RUNS = 5
CALLS = 1500
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def tool_call(request_id: int | str, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> dict:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cold_start(app: str, cwd: Path, env: dict[str, str]) -> float:
    port = _free_port()
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", app, "--port", str(port), "--log-level", "warning", "--lifespan", "on"],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5).status_code == 200:
                    return time.perf_counter() - started
            except httpx.HTTPError:
                time.sleep(0.005)
            if time.perf_counter() - started > 30:
                raise RuntimeError(f"{app} did not start")
    finally:
        process.terminate()
        process.wait(timeout=10)


def cold_start_rows() -> list[dict[str, Any]]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    ours_env = {
        **base,
        "PYTHONPATH": f"{ROOT / 'layers/platform/python'}:{ROOT / 'functions/endpoint'}",
        "SESSION_TABLE_NAME": "bench",
        "EVENT_STREAM_NAME": "bench",
        "PRODUCER_DLQ_URL": "http://127.0.0.1:9/queue/dlq",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",  # never contacted at start-up
    }
    peer_env = {**base, "PYTHONPATH": str(ROOT / "bench")}
    ours = min(_cold_start("endpoint_app:app", ROOT / "functions/endpoint", ours_env) for _ in range(COLD_RUNS))
    peer = min(_cold_start("peer_sdk_server:app", ROOT / "bench", peer_env) for _ in range(COLD_RUNS))
    return [
        {
            "metric": "cold start to /healthz (ours)",
            "value": round(ours * 1000),
            "unit": "ms",
            "note": "DynamoDB client built at start; Kinesis and SQS on first use",
        },
        {
            "metric": "cold start to /healthz (official SDK)",
            "value": round(peer * 1000),
            "unit": "ms",
            "note": "no AWS clients",
        },
        {"metric": "cold start ratio ours/SDK", "value": round(ours / peer, 2), "unit": "x", "note": "target <= 0.6"},
    ]


def _our_app() -> tuple[Any, FakeDynamo, FakeKinesis]:
    import mcp_tools
    from mcp_platform.auth.api_keys import ApiKeyStore
    from mcp_platform.config import Settings
    from mcp_platform.http.app import build_app

    dynamo, kinesis = FakeDynamo(), FakeKinesis()
    settings = Settings.from_mapping(
        {"SESSION_TABLE_NAME": "bench", "EVENT_STREAM_NAME": "bench", "PRODUCER_DLQ_URL": "dlq"}
    )
    ApiKeyStore("bench", dynamo).mint("bench", key="bench-key")
    # Metric lines go to an in-memory sink: written (their cost is measured), not printed.
    app = build_app(settings, mcp_tools, dynamodb=dynamo, kinesis=kinesis, sqs=FakeSqs(), metrics_stream=io.StringIO())
    return app, dynamo, kinesis


async def _measure(app: Any, calls: list[tuple[dict[str, str], dict[str, Any]]]) -> list[float]:
    durations = []
    for headers, body in calls:
        started = time.perf_counter()
        status, _, _ = await asgi_post(app, "/mcp", headers, body)
        durations.append(time.perf_counter() - started)
        assert status == 200, status
    return durations


def cpu_rows() -> list[dict[str, Any]]:
    from peer_sdk_server import build

    app, dynamo, _ = _our_app()
    auth = {"authorization": "Bearer bench-key", "accept": "application/json"}

    async def ours() -> tuple[list[float], list[float], list[float], dict[str, int], dict[str, int]]:
        _, headers, _ = await asgi_post(app, "/mcp", auth, INITIALIZE)
        session = {**auth, "mcp-session-id": headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        echo = [(session, tool_call(i, "echo", {"text": "hi"})) for i in range(1, CALLS)]
        note = [(session, tool_call(f"n{i}", "append_note", {"text": "hi"})) for i in range(CALLS)]
        info = [(session, tool_call(f"i{i}", "session_info", {})) for i in range(CALLS)]
        echo_times = await _measure(app, echo)
        counted = []
        for name, arguments in (("append_note", {"text": "hi"}), ("session_info", {})):
            dynamo.calls.clear()
            await asgi_post(app, "/mcp", session, tool_call(f"count-{name}", name, arguments))
            counted.append(dict(dynamo.calls))
        return echo_times, await _measure(app, note), await _measure(app, info), counted[0], counted[1]

    async def peer() -> list[float]:
        peer_app = build(json_response=True)
        async with peer_app.router.lifespan_context(peer_app):
            headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
            calls = [(headers, tool_call(i, "echo", {"text": "hi"})) for i in range(CALLS)]
            return await _measure(peer_app, calls)

    echo_times, session_times, read_times, counted, counted_read = asyncio.run(ours())
    peer_times = asyncio.run(peer())
    ours_p50 = statistics.median(echo_times) * 1e6
    peer_p50 = statistics.median(peer_times) * 1e6
    return [
        {"metric": "tools/call echo p50 (ours)", "value": round(ours_p50), "unit": "us", "note": "in-process ASGI"},
        {
            "metric": "tools/call echo p50 (official SDK)",
            "value": round(peer_p50),
            "unit": "us",
            "note": "stateless JSON",
        },
        {"metric": "tools/call ratio ours/SDK", "value": round(ours_p50 / peer_p50, 2), "unit": "x", "note": ""},
        {
            "metric": "tools/call session tool p50 (ours)",
            "value": round(statistics.median(session_times) * 1e6),
            "unit": "us",
            "note": "append_note (append-only): BatchGet + TransactWrite on a zero-latency fake; target p50 <= 1000",
        },
        {
            "metric": "tools/call read-only session tool p50 (ours)",
            "value": round(statistics.median(read_times) * 1e6),
            "unit": "us",
            "note": "session_info: one BatchGet, no write",
        },
        {
            "metric": "AWS calls on the critical path, append-only",
            "value": sum(counted.values()),
            "unit": "calls",
            "note": ", ".join(f"{k}={v}" for k, v in sorted(counted.items()))
            + "; Kinesis flushed before the last byte",
        },
        {
            "metric": "AWS calls on the critical path, read-only",
            "value": sum(counted_read.values()),
            "unit": "calls",
            "note": ", ".join(f"{k}={v}" for k, v in sorted(counted_read.items())),
        },
    ]


def streaming_rows() -> list[dict[str, Any]]:
    import uvicorn

    app, _, _ = _our_app()
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        auth = {"authorization": "Bearer bench-key", "accept": "application/json, text/event-stream"}
        init = httpx.post(url, headers=auth, json=INITIALIZE)
        headers = {**auth, "mcp-session-id": init.headers["mcp-session-id"]}
        body = tool_call(1, "countdown", {"steps": 3, "interval_ms": 1000}, meta={"progressToken": "p"})
        started = time.perf_counter()
        with httpx.stream("POST", url, headers=headers, json=body, timeout=30) as response:
            headers_at = time.perf_counter() - started
            progress_at = None
            for line in response.iter_lines():
                if progress_at is None and "notifications/progress" in line:
                    progress_at = time.perf_counter() - started
            total = time.perf_counter() - started
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    return [
        {
            "metric": "3 s streaming tool: headers",
            "value": round(headers_at * 1000, 1),
            "unit": "ms",
            "note": "target <= 50",
        },
        {
            "metric": "3 s streaming tool: first progress event",
            "value": round((progress_at or 0) * 1000, 1),
            "unit": "ms",
            "note": f"target <= 50; stream ended at {total:.2f} s",
        },
    ]


def run() -> list[dict[str, Any]]:
    return [*cold_start_rows(), *cpu_rows(), *streaming_rows()]
