"""`python -m local.soak`: many small tool calls through a fresh local platform, and what it costs.

Starts `python -m local` (with --attach, also a second endpoint) on free loopback ports and
acts like an agent: `append_note` calls, a new session (`open_session`) every --session-calls,
alternating between the endpoints. It samples the processes' VmRSS, waits until every call has
its audit record, then sends SIGTERM while two clients keep calling: `python -m local.soak
--calls 3000 [--attach]`.

The platform serves its own test tools (tests/support/platform_tools, where those two are), not
the app in the features folder: the soak measures the platform whatever the app holds
(--features serves another folder).
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from local.bootstrap import LOOPBACK, ROOT
from local.health import parse_line, resident_mb
from local.soak_client import await_audit, drive

START_DEADLINE_S = 120.0
STOP_DEADLINE_S = 60.0
PRINT = functools.partial(print, flush=True)  # progress shows while the soak runs, also into a file
# The platform's own tools: the soak calls append_note and open_session, which an app need not have.
PLATFORM_TOOLS = ROOT / "tests" / "support" / "platform_tools"
WINDOW = 250  # calls compared at the start and at the end


@dataclass
class SoakResult:
    calls: int
    seconds: float
    latencies_s: list[float]
    peak_rss_mb: dict[str, float]  # "platform", and "attached" with --attach
    audit_lag_s: float | None  # from the last call until every call had its audit record; None: not in time
    missing_audit: int
    stop_s: float  # SIGTERM under load until the process exited (inf: not within STOP_DEADLINE_S)
    log: Path
    final_health: str  # the platform's last health line on SIGUSR1 (its pipeline lag 0 once drained)
    rss_trace: list[tuple[int, float]] = field(default_factory=list)  # (calls so far, platform MB)

    def p50_ms(self, part: slice) -> float:
        return statistics.median(self.latencies_s[part]) * 1000

    def summary(self) -> str:
        rss = ", ".join(f"{name} {mb:.0f} MB" for name, mb in self.peak_rss_mb.items())
        lag = "not within the deadline" if self.audit_lag_s is None else f"{self.audit_lag_s:.1f} s after the last call"
        first, last = self.p50_ms(slice(None, WINDOW)), self.p50_ms(slice(-WINDOW, None))
        windows = range(0, len(self.latencies_s), WINDOW)
        return (
            f"{self.calls} calls in {self.seconds:.0f} s ({self.calls / self.seconds:.1f}/s); peak RSS {rss}\n"
            f"p50 first {WINDOW} {first:.1f} ms, last {WINDOW} {last:.1f} ms (x{last / first:.2f}); "
            f"max {max(self.latencies_s) * 1000:.0f} ms\n"
            f"p50 per {WINDOW} calls (ms): {' '.join(f'{self.p50_ms(slice(i, i + WINDOW)):.0f}' for i in windows)}\n"
            f"audit: {self.missing_audit} call(s) without an audit record; complete {lag}\n"
            f"SIGTERM under load: exited in {self.stop_s:.1f} s   (log: {self.log})\n"
            f"last health line: {self.final_health}"
        )


def soak(
    calls: int,
    *,
    attach: bool = False,
    per_session: int = 10,
    log_dir: Path | None = None,
    max_rss_mb: float = 0,  # > 0: abort once the platform is larger
    progress: Callable[[str], None] = PRINT,
    features: Path = PLATFORM_TOOLS,  # served as the features folder (MCP_FEATURES_DIR)
) -> SoakResult:
    log_path = (log_dir or Path(tempfile.mkdtemp(prefix="local-soak-"))) / "platform.log"
    ports = {name: _free_port() for name in ("mcp", "second", "aws")}
    api_key = f"mcpk_soak_{uuid.uuid4().hex}"
    env = {**os.environ, "MCP_PORT": str(ports["mcp"]), "LOCAL_AWS_PORT": str(ports["aws"]), "MCP_API_KEY": api_key}
    env.setdefault("LOCAL_LOG_DIR", str(log_path.parent))  # the endpoint log files beside the platform's log
    env["MCP_FEATURES_DIR"] = str(features)
    env.pop("MCP_AUTH", None)
    aws_url = f"http://{LOOPBACK}:{ports['aws']}"
    with ExitStack() as stack:
        log = stack.enter_context(log_path.open("w"))
        processes = {"platform": _start([], env, log, ports["mcp"])}
        stack.callback(_stop, processes["platform"])
        urls = [f"http://{LOOPBACK}:{ports['mcp']}/mcp"]
        if attach:
            second = {**env, "MCP_PORT": str(ports["second"])}
            processes["attached"] = _start(["--attach"], second, log, ports["second"])
            stack.callback(_stop, processes["attached"])
            urls.append(f"http://{LOOPBACK}:{ports['second']}/mcp")
        peak = dict.fromkeys(processes, 0.0)
        trace: list[tuple[int, float]] = []
        started = time.monotonic()

        def tick(done: int) -> None:
            if done % 10 and done != calls:
                return
            for name, process in processes.items():
                peak[name] = max(peak[name], resident_mb(process.pid))
            trace.append((done, resident_mb(processes["platform"].pid)))
            if max_rss_mb and peak["platform"] > max_rss_mb:
                raise RuntimeError(f"platform RSS {peak['platform']:.0f} MB > {max_rss_mb:.0f} MB after {done} calls")
            if done % WINDOW == 0:
                progress(f"{done} calls in {time.monotonic() - started:.0f} s, platform RSS {trace[-1][1]:.0f} MB")

        latencies, sessions = drive(urls, api_key, calls, per_session, tick)
        seconds = time.monotonic() - started
        health: list[str] = []
        lag, missing = await_audit(aws_url, sessions, lambda: _drained(processes["platform"], log_path, health))
        stop_s = _stop_under_load(processes["platform"], urls[0], api_key)
    return SoakResult(calls, seconds, latencies, peak, lag, missing, stop_s, log_path, health[-1], trace)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def _start(args: list[str], env: Mapping[str, str], log: IO[str], port: int) -> subprocess.Popen[bytes]:
    import httpx

    command = [sys.executable, "-m", "local", *args]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)  # noqa: S603 - our own module
    deadline = time.monotonic() + START_DEADLINE_S
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"python -m local {' '.join(args)} exited {process.returncode}: see {log.name}")
        try:
            if httpx.get(f"http://{LOOPBACK}:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError as error:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no /healthz on port {port} within {START_DEADLINE_S:.0f} s") from error
        time.sleep(0.25)


def _drained(platform: subprocess.Popen[bytes], log_path: Path, lines: list[str]) -> bool:
    """Asks for a health line (SIGUSR1); True once the platform's (not an attached endpoint's,
    which has no pollers) shows no pipeline lag."""
    platform.send_signal(signal.SIGUSR1)
    time.sleep(1.0)
    found = [text for text in log_path.read_text().splitlines() if "health: " in text and "pipeline lag" in text]
    lines.append(found[-1] if found else "")
    return bool(found) and not any(parse_line(found[-1])[1].values())


def _stop_under_load(platform: subprocess.Popen[bytes], url: str, api_key: str) -> float:
    ended: list[BaseException] = []  # how each load client ended: with the platform going away

    def load() -> None:
        try:
            drive([url], api_key, 1_000_000, 10, lambda _n: None)
        except BaseException as error:
            ended.append(error)

    workers = [threading.Thread(target=load, daemon=True) for _ in range(2)]
    for worker in workers:
        worker.start()
    time.sleep(2.0)
    stopped = _stop(platform, signal.SIGTERM)
    for worker in workers:
        worker.join(timeout=30)
    if stopped < STOP_DEADLINE_S and (platform.returncode != 0 or len(ended) != len(workers)):
        raise RuntimeError(f"after SIGTERM: exit code {platform.returncode}, load clients ended by {ended}")
    return stopped


def _stop(process: subprocess.Popen[bytes], signum: int = signal.SIGINT) -> float:
    """Seconds from ``signum`` until the process exited (inf: killed after STOP_DEADLINE_S)."""
    if process.poll() is not None:
        return 0.0
    sent = time.monotonic()
    process.send_signal(signum)
    try:
        process.wait(timeout=STOP_DEADLINE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
        return float("inf")
    return time.monotonic() - sent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local.soak", description=__doc__)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--attach", action="store_true", help="alternate the calls with a second endpoint")
    parser.add_argument("--session-calls", type=int, default=10, help="calls per session")
    parser.add_argument("--max-rss-mb", type=float, default=0, help="abort once the platform is larger (0: never)")
    parser.add_argument(
        "--features",
        type=Path,
        default=PLATFORM_TOOLS,
        help="the features folder served (default: the platform's test tools); needs append_note and open_session",
    )
    args = parser.parse_args(argv)
    result = soak(
        args.calls,
        attach=args.attach,
        per_session=args.session_calls,
        max_rss_mb=args.max_rss_mb,
        features=args.features,
    )
    print(result.summary(), flush=True)
    return 0 if result.missing_audit == 0 and result.stop_s != float("inf") else 1


if __name__ == "__main__":
    sys.exit(main())
