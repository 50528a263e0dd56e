"""Loopback throughput: tools/call over real HTTP through uvicorn, 8 keep-alive connections.

Both servers run as a separate process started with run.sh's uvicorn flags; the load comes from
a third process (raw asyncio sockets, far cheaper per request than either server, so the two
cores measure the servers). Same request for both: a 2026-07-28 stateless echo, plain JSON,
bearer auth. Ours runs on zero-latency fake AWS clients (served_ours.py): its per-call Kinesis
flush and cached key check cost CPU here, a network round trip on Lambda.

The HTTP stack is compared too: the one run.sh names (httptools + uvloop, in the shared layer),
against uvicorn's pure-Python default (h11 + asyncio), on both servers. The rows for the former
run when ``httptools`` and ``uvloop`` import, from the venv or from ``BENCH_STANDARD_PATH`` (a
``pip install --target`` directory), and say so otherwise.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import BENCH_KEY, ROOT, free_port, lambda_uvicorn_args, modern_call, row

CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "8"))
SECONDS = float(os.environ.get("BENCH_LOAD_SECONDS", "3"))
REPEATS = int(os.environ.get("BENCH_LOAD_REPEATS", "6"))  # rounds: the shared machine drifts by tens of %
BENCH = Path(__file__).resolve().parent


def _request_bytes(port: int) -> bytes:
    headers, body = modern_call(1, "echo", {"text": "hi"})
    payload = json.dumps(body).encode()
    lines = [
        "POST /mcp HTTP/1.1",
        f"host: 127.0.0.1:{port}",
        "content-type: application/json",
        f"content-length: {len(payload)}",
        f"authorization: Bearer {BENCH_KEY}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


async def _connection(port: int, request: bytes, stop_at: float, counts: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while time.perf_counter() < stop_at:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = head[9:12]
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            body = await reader.readexactly(length)
            if status != b"200" or b'"result"' not in body:
                raise RuntimeError(f"{status!r} {body[:200]!r}")
            counts[0] += 1
    finally:
        writer.close()


async def _load(port: int, connections: int, seconds: float) -> float:
    request = _request_bytes(port)
    warm = [0]
    await asyncio.gather(*(_connection(port, request, time.perf_counter() + 0.5, warm) for _ in range(connections)))
    counts = [0]
    started = time.perf_counter()
    await asyncio.gather(*(_connection(port, request, started + seconds, counts) for _ in range(connections)))
    return counts[0] / (time.perf_counter() - started)


def _standard_path() -> str | None:
    """Where httptools and uvloop import from: "" (the venv), a directory, or None (absent)."""
    if importlib.util.find_spec("httptools") and importlib.util.find_spec("uvloop"):
        return ""
    extra = os.environ.get("BENCH_STANDARD_PATH", "")
    if extra and (Path(extra) / "httptools").is_dir() and (Path(extra) / "uvloop").is_dir():
        return extra
    return None


def _serve_and_load(app: str, stack: list[str], extra_path: str = "") -> float:
    port = free_port()
    path = [str(BENCH), str(ROOT / "layers/platform/python"), str(ROOT / "functions/endpoint")]
    if extra_path:
        path.append(extra_path)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, "PYTHONPATH": ":".join(path)}
    env.update({"AWS_EC2_METADATA_DISABLED": "true", "AWS_REGION": "us-east-1"})
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", *lambda_uvicorn_args(app, port), *stack],
        cwd=BENCH,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import httpx

        deadline = time.perf_counter() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{app} did not start")
        load = subprocess.run(
            [sys.executable, __file__, "--load", str(port), str(CONNECTIONS), str(SECONDS)],
            capture_output=True,
            text=True,
            check=True,
            cwd=BENCH,
        )
        return float(load.stdout.strip())
    finally:
        server.terminate()
        server.wait(timeout=10)


def run() -> list[dict[str, Any]]:
    default = ["--http", "h11", "--loop", "asyncio"]
    rounds: dict[tuple[str, str], list[float]] = {}
    standard = _standard_path()
    stacks = {"h11": (default, "")}
    if standard is not None:
        stacks["standard"] = (["--http", "httptools", "--loop", "uvloop"], standard)
    sides = (("ours", "served_ours:app"), ("peer", "peer_sdk_server:app_bearer"), ("floor", "floor_app:app"))
    for _ in range(REPEATS):  # alternate, so drift on the shared machine hits every side alike
        for stack, (flags, extra) in stacks.items():
            for side, app in sides:
                if side == "floor" and stack != "standard":
                    continue
                rounds.setdefault((side, stack), []).append(_serve_and_load(app, flags, extra))
    if os.environ.get("BENCH_LOOPBACK_ROUNDS"):  # every round's rates, for a look at the spread
        print(json.dumps({f"{side}/{stack}": rates for (side, stack), rates in rounds.items()}), file=sys.stderr)
    best = {key: max(rates) for key, rates in rounds.items()}
    note = (
        f"{CONNECTIONS} keep-alive connections, 2026 stateless echo, plain JSON, bearer on both; "
        f"best of {REPEATS} x {SECONDS:g} s; ours flushes one Kinesis event per call (fake)"
    )
    rows = [
        row(
            "loopback throughput, uvicorn h11+asyncio",
            round(best[("ours", "h11")]),
            round(best[("peer", "h11")]),
            "req/s",
            f"{note}; uvicorn's pure-Python default, for comparison; higher is better",
        )
    ]
    if "standard" in stacks:
        ours_std, peer_std = best[("ours", "standard")], best[("peer", "standard")]
        rows += [
            row(
                "loopback throughput, uvicorn[standard] httptools+uvloop",
                round(ours_std),
                round(peer_std),
                "req/s",
                "the stack run.sh names; each side's best round, wherever it fell (the target is read "
                "per round, next row); higher is better"
                f"{' (extras from BENCH_STANDARD_PATH)' if standard else ''}",
            ),
            _paired_row(rounds[("ours", "standard")], rounds[("peer", "standard")]),
            _floor_row(ours_std, peer_std, best[("floor", "standard")]),
            row(
                "our throughput: [standard] vs h11 (same app)",
                round(ours_std),
                round(best[("ours", "h11")]),
                "req/s",
                "ours on httptools+uvloop / ours on h11+asyncio: the HTTP stack alone",
            ),
        ]
    else:
        rows.append(
            row(
                "loopback throughput, uvicorn[standard]",
                "-",
                "-",
                "req/s",
                "skipped: httptools/uvloop not importable (set BENCH_STANDARD_PATH to a pip --target dir)",
            )
        )
    return rows


def _paired_row(ours: list[float], peer: list[float]) -> dict[str, Any]:
    """Each round measures both servers back to back: the median of those rounds' ratios is what
    the machine's drift disturbs least (a best-of takes each side's luckiest moment apart)."""
    ratios = sorted(o / p for o, p in zip(ours, peer, strict=True))
    return row(
        "loopback throughput, httptools+uvloop, per round",
        round(statistics.median(ours)),
        round(statistics.median(peer)),
        "req/s",
        f"medians of {len(ratios)} rounds; ratio = the median of the rounds' own ratios "
        f"(they ranged {ratios[0]:.2f}-{ratios[-1]:.2f}); target >= 3",
        ratio=statistics.median(ratios),
    )


def _floor_row(ours: float, peer: float, floor: float) -> dict[str, Any]:
    """Each server's own work per request: its time per request less the floor's (uvicorn, the
    syscalls and the load generator, which every server pays alike)."""
    floor_us = 1e6 / floor
    ours_us, peer_us = 1e6 / ours - floor_us, 1e6 / peer - floor_us
    return row(
        "loopback: each server's own work per request",
        round(ours_us),
        round(peer_us),
        "us",
        f"time per request less the floor's: uvicorn answering a fixed result (floor_app.py) at "
        f"{floor:.0f} req/s, {floor_us:.0f} us",
    )


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--load":
        rate = asyncio.run(_load(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])))
        print(f"{rate:.1f}")
    else:
        for line in run():
            print(line)
