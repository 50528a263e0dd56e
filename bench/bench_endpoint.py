"""Endpoint benchmarks, ours against the official SDK's minimal server doing the same work.

1. Cold start: the server started exactly as run.sh starts it on Lambda (serving the platform's
   own tools, tests/support/platform_tools, in place of the app), to /healthz 200 (the Web
   Adapter's readiness check) and to the first tools/call answer; min of several runs.
2. CPU per request, in-process ASGI (no network; our AWS clients are zero-latency fakes):
   - 2026-07-28 stateless tools/call, plain JSON, no auth on either side;
   - the same with bearer auth on both (our API key, cached; the SDK's TokenVerifier);
   - 2025-11-25 tools/call in a session, SSE, bearer on both: ours reads the session from
     DynamoDB (persisted: any instance serves it), the SDK's stateful server from memory.
   Rounds alternate ours and the peer, so drift on this shared machine hits both alike.
3. A streamed tool (2026, SSE, progress): time to headers and to the first progress event.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from common import (
    BENCH_KEY,
    BOTH,
    HANDSHAKE,
    INITIALIZE,
    INITIALIZED,
    ROOT,
    callgrind_millions,
    free_port,
    lambda_server_command,
    modern_call,
    our_app,
    p50_us,
    row,
    tool_call,
)
from fakes import asgi_post

COLD_RUNS = int(os.environ.get("BENCH_COLD_RUNS", "5"))
COLD_CALL = Path(__file__).resolve().parent / "cold_call.py"
WARM_CALLS = Path(__file__).resolve().parent / "warm_calls.py"
INSTRUCTION_CALLS = (100, 300)  # warm calls counted at two counts: the difference is the calls' work
CALLS = int(os.environ.get("BENCH_CALLS", "600"))  # per round and side
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "4"))
Call = tuple[dict[str, str], dict[str, Any]]


# -- 1. cold start -------------------------------------------------------------------------------
class _AwsStub(BaseHTTPRequestHandler):
    """A zero-latency Kinesis and DynamoDB on loopback: accepts every PutRecords (the first
    tools/call's flush) and every DynamoDB write (the first initialize's session). Each client
    is built on that first use, as on Lambda."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        answer: dict[str, Any] = {}
        if self.headers.get("x-amz-target", "").endswith(".PutRecords"):
            records = body.get("Records", [])
            answer = {"FailedRecordCount": 0, "Records": [{"SequenceNumber": "1", "ShardId": "s"} for _ in records]}
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/x-amz-json-1.1")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def _aws_stub() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AwsStub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def _staged_endpoint(scratch: Path) -> Path:
    """A copy of the endpoint function's code (run.sh, endpoint_app.py) serving the platform's
    own tools in place of the app in functions/endpoint/mcp_tools: the cold start measured is the
    platform's, whatever the app imports."""
    from tests.support.features import serve_from_asset

    task_root = scratch / "endpoint"
    shutil.copytree(ROOT / "functions/endpoint", task_root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    serve_from_asset(task_root)
    return task_root


def _cold_start(app: str, cwd: str, env: dict[str, str], first_call: Call) -> tuple[float, float]:
    """(to /healthz 200, to the first tools/call answer) in seconds from process start."""
    port = free_port()
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, *lambda_server_command(app, port)],
        cwd=cwd,
        env={**env, "AWS_LWA_PORT": str(port)},  # as the Web Adapter sets it
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with httpx.Client(timeout=5) as client:
            while True:
                try:
                    if client.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                        ready = time.perf_counter() - started
                        break
                except httpx.HTTPError:
                    time.sleep(0.002)
                if time.perf_counter() - started > 30:
                    raise RuntimeError(f"{app} did not start")
            headers, body = first_call
            answer = client.post(f"http://127.0.0.1:{port}/mcp", headers=headers, json=body)
            answered = time.perf_counter() - started
            assert answer.status_code == 200 and '"result"' in answer.text, answer.text
        return ready, answered
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def _deployed_layer() -> Iterator[Path]:
    """The layer's ``python/`` as synth bundles it for a deploy (dependencies, the current
    sources, their bytecode for the runtime's Python), in a scratch folder."""
    from scripts.layer import lambda_python
    from stacks.shared_layer import LayerBundler

    architecture = {"aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), "x86_64")
    with tempfile.TemporaryDirectory(prefix="bench-layer-") as scratch:
        LayerBundler(architecture, lambda_python()).try_bundle(scratch)
        yield Path(scratch) / "python"


def cold_start_rows() -> list[dict[str, Any]]:
    # Both sides start as on Lambda, where code and layers are read-only: no bytecode is cached,
    # each side runs on what it ships (ours: the bundled layer; the SDK: its installed package).
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | {"PYTHONDONTWRITEBYTECODE": "1"}
    headers, body = modern_call(1, "echo", {"text": "hi"})
    echo = ({**headers, "authorization": f"Bearer {BENCH_KEY}"}, body)
    initialize = ({"accept": BOTH}, INITIALIZE)  # 2025: ours writes the session to DynamoDB
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with (
        _aws_stub() as aws_url,
        _deployed_layer() as layer,
        tempfile.TemporaryDirectory(prefix="bench-endpoint-") as scratch,
    ):
        task_root = _staged_endpoint(Path(scratch))
        ours_env = {
            **base,
            "PYTHONPATH": f"{task_root}:{layer}:{ROOT / 'bench'}",
            "SESSION_TABLE_NAME": "bench",
            "EVENT_STREAM_NAME": "bench",
            "PRODUCER_DLQ_URL": "http://127.0.0.1:9/queue/dlq",
            "MCP_AUTH": "none",
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_ENDPOINT_URL_DYNAMODB": aws_url,
            "AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9",  # never contacted by these calls
            "AWS_ENDPOINT_URL_KINESIS": aws_url,
        }
        # The same server launcher (the layer's mcp_platform.transport.serving) serves the peer.
        peer_env = {**base, "PYTHONPATH": f"{ROOT / 'bench'}:{layer}"}
        sides = {
            ("ours", "echo"): ("endpoint_app:app", str(task_root), ours_env, echo),
            ("peer", "echo"): ("peer_sdk_server:app", str(ROOT / "bench"), peer_env, echo),
            ("ours", "initialize"): ("endpoint_app:app", str(task_root), ours_env, initialize),
            ("peer", "initialize"): ("peer_sdk_server:app_stateful", str(ROOT / "bench"), peer_env, initialize),
        }
        for _ in range(COLD_RUNS):  # alternating, so drift hits both alike
            for key, (app, cwd, env, first_call) in sides.items():
                runs.setdefault(key, []).append(_cold_start(app, cwd, env, first_call))
        # The same cold start counted in instructions: what a busy machine cannot skew.
        instructions = {
            # the Host the ASGI request names
            side: callgrind_millions(COLD_CALL, app, cwd=cwd, env={**env, "AWS_LWA_PORT": "8000"})
            for side, (app, cwd, env, _) in (("ours", sides[("ours", "echo")]), ("peer", sides[("peer", "echo")]))
        }

    def best(side: str, call: str, index: int) -> int:
        return round(min(run[index] for run in runs[(side, call)]) * 1000)

    command = " ".join(lambda_server_command("APP", 0)).replace(" --port 0", "")
    return [
        row(
            "cold start to /healthz 200",
            best("ours", "echo", 0),
            best("peer", "echo", 0),
            "ms",
            f"process start, python {command} (run.sh), ours from the layer as synth bundles it, no bytecode "
            f"written (read-only, as on Lambda); min of {COLD_RUNS}; target ratio <= 0.5",
        ),
        row(
            "cold start to first tools/call answer",
            best("ours", "echo", 1),
            best("peer", "echo", 1),
            "ms",
            "then one 2026 stateless echo, no auth; ours builds its Kinesis client and flushes the call's "
            "event after the answer, before its last byte (loopback stub); it never builds its DynamoDB client",
        ),
        row(
            "cold start to first tools/call answer, instructions",
            instructions["ours"],
            instructions["peer"],
            "M instr",
            "the same start in one process (bench/cold_call.py: the launcher's imports, the app's, its "
            "lifespan, one echo through ASGI, counted to the answer's last byte) under valgrind's callgrind: "
            "repeatable whatever else the machine runs; 0 when valgrind is missing",
        ),
        row(
            "cold start to first initialize answer",
            best("ours", "initialize", 1),
            best("peer", "initialize", 1),
            "ms",
            "a 2025 session opened first: ours builds its DynamoDB client then and writes the session "
            "(loopback stub), the SDK's stateful server keeps it in memory",
        ),
    ]


# -- 2. CPU per request --------------------------------------------------------------------------
async def _timed(app: Any, calls: list[Call], answers: list[float] | None = None) -> list[float]:
    """Each call's time to the app's return (what the request costs: all its work); with
    ``answers``, each one's time to the moment the client holds the whole answer too."""
    durations = []
    for headers, body in calls:
        started = time.perf_counter()
        answered = None if answers is None else functools.partial(_since, started, answers)
        status, _, raw = await asgi_post(app, "/mcp", headers, body, answered=answered)
        durations.append(time.perf_counter() - started)
        if status != 200 or b'"result"' not in raw:
            raise AssertionError(f"{status} {raw[:300]!r}")
    return durations


def _since(started: float, into: list[float]) -> None:
    into.append(time.perf_counter() - started)


async def _alternate(
    sides: dict[str, Callable[[int], list[Call]]],
    apps: dict[str, Any],
    answers: dict[str, list[float]] | None = None,
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {name: [] for name in sides}
    for name, make in sides.items():  # warm-up: caches, lazy imports
        await _timed(apps[name], make(50))
    for _ in range(ROUNDS):
        for name, make in sides.items():
            out[name] += await _timed(apps[name], make(CALLS), None if answers is None else answers[name])
    return out


def _modern_echo(auth: bool) -> Callable[[int], list[Call]]:
    def make(n: int) -> list[Call]:
        calls = []
        for i in range(n):
            headers, body = modern_call(i, "echo", {"text": "hi"})
            if auth:
                headers["authorization"] = f"Bearer {BENCH_KEY}"
            calls.append((headers, body))
        return calls

    return make


async def _open_2025(app: Any, auth: bool) -> dict[str, str]:
    headers = {"accept": BOTH, **({"authorization": f"Bearer {BENCH_KEY}"} if auth else {})}
    status, answer_headers, _ = await asgi_post(app, "/mcp", headers, INITIALIZE)
    assert status == 200, status
    session = {**headers, "mcp-session-id": answer_headers["mcp-session-id"], "mcp-protocol-version": HANDSHAKE}
    status, _, _ = await asgi_post(app, "/mcp", session, INITIALIZED)
    assert status == 202, status
    return session


def cpu_rows() -> list[dict[str, Any]]:
    from peer_sdk_server import build

    async def measure() -> list[dict[str, Any]]:
        rows = []
        # 2026 stateless, plain JSON: no auth on either side, then bearer on both.
        for auth in (False, True):
            peer = build(json_response=True, stateless=True, auth=auth)
            async with peer.router.lifespan_context(peer):
                ours = our_app(auth=auth)
                answers: dict[str, list[float]] = {"ours": [], "peer": []}
                times = await _alternate(
                    {"ours": _modern_echo(auth), "peer": _modern_echo(auth)}, {"ours": ours, "peer": peer}, answers
                )
            label = "bearer on both" if auth else "no auth on either"
            rows.append(
                row(
                    f"2026 stateless tools/call p50 ({'bearer' if auth else 'no auth'})",
                    round(p50_us(times["ours"])),
                    round(p50_us(times["peer"])),
                    "us",
                    f"echo, plain JSON, {label}; in-process ASGI, to the app's return: all of a request's work; "
                    f"ours also queues + flushes the call's Kinesis event (fake client) and writes its metric "
                    f"line{'; target ratio <= 0.4' if not auth else ''}",
                )
            )
            rows.append(
                row(
                    f"2026 stateless tools/call p50 to the whole answer ({'bearer' if auth else 'no auth'})",
                    round(p50_us(answers["ours"])),
                    round(p50_us(answers["peer"])),
                    "us",
                    "the same calls, to the moment the client holds the whole answer (its Content-Length): ours "
                    "flushes the event and writes the metric line after it, before the response ends",
                )
            )
        # 2025 sessions over SSE, bearer on both.
        peer = build(json_response=False, stateless=False, auth=True)
        async with peer.router.lifespan_context(peer):
            ours = our_app(auth=True)
            sessions = {"ours": await _open_2025(ours, True), "peer": await _open_2025(peer, True)}

            def session_echo(side: str) -> Callable[[int], list[Call]]:
                counter = iter(range(10**9))
                return lambda n: [(sessions[side], tool_call(next(counter), "echo", {"text": "hi"})) for _ in range(n)]

            times = await _alternate(
                {"ours": session_echo("ours"), "peer": session_echo("peer")}, {"ours": ours, "peer": peer}
            )
        rows.append(
            row(
                "2025 session tools/call p50 (SSE, bearer)",
                round(p50_us(times["ours"])),
                round(p50_us(times["peer"])),
                "us",
                "echo in an Mcp-Session-Id session, SSE answer, bearer on both; ours reads the session "
                "from DynamoDB (fake: persisted, any instance serves it), the SDK from its memory; "
                "target ratio <= 0.6",
            )
        )
        return rows

    return asyncio.run(measure())


def policy_rules(words_tool: str) -> str:
    """20 rules over the platform's tools, of the kinds the policies page shows: a permit for every
    tool, forbids on argument values (five on ``words_tool``'s text), group-only tools, tenants'
    subsets."""
    rules = [
        'permit(principal, action in Action::"call_tool", resource);',
        'permit(principal, action == Action::"read_resource", resource);',
        'permit(principal, action == Action::"get_prompt", resource);',
        *(
            f'forbid(principal, action == Action::"{words_tool}", resource) '
            f'when {{ context.arguments.text like "*{word}*" }};'
            for word in ("secret", "password", "token", "private-key", "ssn")
        ),
        *(
            'forbid(principal, action == Action::"countdown", resource) '
            f"when {{ context.arguments has steps && context.arguments.steps > {limit} }} "
            f'unless {{ principal in Group::"{group}" }};'
            for limit, group in ((10, "operators"), (50, "admins"), (90, "owners"))
        ),
        *(
            f'forbid(principal, action == Action::"{tool}", resource) unless {{ principal in Group::"admins" }};'
            for tool in ("session_audit", "recent_tool_events", "session_report")
        ),
        *(
            'forbid(principal, action in Action::"call_tool", resource) '
            f'when {{ principal has tenant && principal.tenant == "{tenant}" }} '
            'unless { action in [Action::"echo", Action::"open_session"] };'
            for tenant in ("trial", "sandbox", "free", "demo", "edu", "beta")
        ),
    ]
    assert len(rules) == 20
    return "\n".join(rules)


def policy_rows() -> list[dict[str, Any]]:
    """G4: the same stateless call with a 20-rule policy set and without any; once where no rule
    reads echo's arguments (decided once per caller and tool, then looked up), once where five do
    (the other rules decided once per caller and tool, those five by Cedar on each call)."""

    async def measure(words_tool: str) -> dict[str, list[float]]:
        with tempfile.TemporaryDirectory(prefix="bench-policies-") as folder:
            (Path(folder) / "rules.cedar").write_text(policy_rules(words_tool))
            apps = {"ours": our_app(auth=True, policies=folder), "peer": our_app(auth=True)}
            return await _alternate({"ours": _modern_echo(True), "peer": _modern_echo(True)}, apps)

    note = (
        "both ours (echo, plain JSON, bearer, in-process ASGI); the peer column is the same endpoint without "
        "policies (nothing of Cedar loaded); ours checks each call against 20 Cedar rules"
    )
    rows = []
    for words_tool, label, how in (
        ("append_note", "no rule on echo's arguments", "decided once per caller and tool, then looked up"),
        (
            "echo",
            "5 rules on echo's arguments",
            "the rules that do not read the arguments decided once per caller and tool, the 5 that do "
            "evaluated on each call with its arguments (in Python: adapters.cedar.evaluator)",
        ),
    ):
        times = asyncio.run(measure(words_tool))
        rows.append(
            row(
                f"2026 stateless tools/call p50, 20 Cedar rules ({label}) vs none",
                round(p50_us(times["ours"])),
                round(p50_us(times["peer"])),
                "us",
                f"{note}: {how}; target ratio <= 1.2",
            )
        )
    return rows


# -- 3. streaming --------------------------------------------------------------------------------
def _first_progress(url: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[float, float, float]:
    """The second call on one keep-alive connection (as the Web Adapter holds it): a fresh
    httpx client per call would time its own TLS-context set-up (tens of ms), not the server."""
    with httpx.Client(timeout=30) as client:
        _one_progress(client, url, headers, {**body, "id": "warm-up"})
        return _one_progress(client, url, headers, body)


def _one_progress(
    client: httpx.Client, url: str, headers: dict[str, str], body: dict[str, Any]
) -> tuple[float, float, float]:
    started = time.perf_counter()
    with client.stream("POST", url, headers=headers, json=body) as response:
        headers_at = time.perf_counter() - started
        progress_at = None
        for line in response.iter_lines():
            if progress_at is None and "notifications/progress" in line:
                progress_at = time.perf_counter() - started
        total = time.perf_counter() - started
    return headers_at, progress_at or float("nan"), total


@contextmanager
def _served(app: Any) -> Iterator[str]:
    import uvicorn

    from mcp_platform.transport.serving import server_config

    port = free_port()
    server = uvicorn.Server(server_config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def streaming_rows() -> list[dict[str, Any]]:
    from peer_sdk_server import build

    headers, body = modern_call(1, "countdown", {"steps": 2, "interval_ms": 1000})
    body["params"]["_meta"] = {**body["params"]["_meta"], "progressToken": "p"}
    headers = {**headers, "accept": BOTH}
    with _served(our_app(auth=False)) as url:
        ours = _first_progress(url, headers, body)
    with _served(build(json_response=False, stateless=True)) as url:
        peer = _first_progress(url, headers, body)
    note = (
        "2026 stateless SSE, progress each 1 s, over loopback uvicorn (no auth), second call on a kept-alive connection"
    )
    return [
        row("2 s streaming tool: headers", round(ours[0] * 1000, 1), round(peer[0] * 1000, 1), "ms", note),
        row(
            "2 s streaming tool: first progress event",
            round(ours[1] * 1000, 1),
            round(peer[1] * 1000, 1),
            "ms",
            f"{note}; ours ended at {ours[2]:.2f} s, the SDK at {peer[2]:.2f} s",
        ),
    ]


def instruction_rows() -> list[dict[str, Any]]:
    """The 2026 stateless call's CPU work counted in instructions: what neither a busy machine nor
    its CPU moves (a time ratio does: our code is Python, much of the SDK's pydantic-core)."""
    few, many = INSTRUCTION_CALLS

    def per_call(side: str) -> int:
        counts = [callgrind_millions(WARM_CALLS, f"{side}:{n}", cwd=ROOT, env=dict(os.environ)) for n in (few, many)]
        return round((counts[1] - counts[0]) * 1000 / (many - few))

    return [
        row(
            "2026 stateless tools/call, instructions per warm call",
            per_call("ours"),
            per_call("peer"),
            "k instr",
            f"echo, plain JSON, no auth, in-process ASGI as the p50 row (bench/warm_calls.py): callgrind's count "
            f"at {many} calls less that at {few}, per call; ours also builds, serializes and flushes the call's "
            "event and writes its metric line; 0 when valgrind is missing",
        )
    ]


def run() -> list[dict[str, Any]]:
    return [*cold_start_rows(), *cpu_rows(), *instruction_rows(), *policy_rows(), *streaming_rows()]


if __name__ == "__main__":
    for line in run():
        print(line)
