"""Starts a synthesized function the way Lambda starts it, on this machine.

What Lambda gives a function, and nothing else: its code asset as the task root, the built layer's
``python/`` and the managed runtime's own folder (the runtime interface client and boto3) on the
path, the environment the template sets plus Lambda's reserved variables, and the runtime's
Python (the venv's base interpreter: no package of the test venv is importable). Event functions
run under the real runtime interface client (``awslambdaric``), which polls :class:`RuntimeApi`;
the endpoint runs its ``run.sh`` as the Web Adapter would, and is probed on its readiness path.
A missing handler, a module the layer lacks or an ABI mismatch therefore fails here as it would
fail in Lambda: as an init error, or as a process that never becomes ready.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
# What `make setup` installs for the runtime's own folder (tests/support/lambda-runtime-requirements.txt).
RUNTIME_DIR = ROOT / "build" / "lambda-runtime"
ACCOUNT = "123456789012"
NEXT_POLL_S = 0.5


class LambdaStartFailed(AssertionError):
    """The function did not start: its init error or its process output says why."""


class InvocationFailed(AssertionError):
    """The handler raised: the error document the runtime client posted."""


@dataclass(frozen=True)
class DeployedFunction:
    """One function of the synthesized template, with its assets on disk."""

    logical_id: str
    name: str
    handler: str
    task_root: Path  # the function's code asset, as staged by synth
    layer_python: Path  # the layer asset's python/ (Lambda mounts it under /opt/python)
    environment: Mapping[str, str]  # the template's variables, resolved
    memory_mb: int
    timeout_s: int
    region: str

    @property
    def arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{ACCOUNT}:function:{self.name}"

    def lambda_environment(self, **extra: str) -> dict[str, str]:
        """The variables Lambda sets for a Python function, then the template's, then ``extra``."""
        python = f"{sys.version_info.major}.{sys.version_info.minor}"
        return {
            "PATH": f"{interpreter_bin()}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "LAMBDA_TASK_ROOT": str(self.task_root),
            "LAMBDA_RUNTIME_DIR": str(RUNTIME_DIR),
            "PYTHONPATH": f"{self.task_root}:{self.layer_python}:{RUNTIME_DIR}",
            # Code and layers are mounted read-only: only the bytecode the assets ship is used.
            "PYTHONDONTWRITEBYTECODE": "1",
            "_HANDLER": self.handler,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_python{python}",
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_LAMBDA_FUNCTION_NAME": self.name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.memory_mb),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{self.name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": "local",
            # The emulator takes any credentials; Lambda gives the role's as these three.
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            **self.environment,
            **extra,
        }


def interpreter_bin() -> Path:
    """A folder whose ``python3`` is the runtime's interpreter without the test venv: the venv's
    base interpreter (run.sh calls ``python3``, as the managed runtime provides it)."""
    folder = Path(tempfile.gettempdir()) / f"lambda-python-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    link = folder / "python3"
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    if not link.exists() or link.resolve() != base:
        link.unlink(missing_ok=True)
        link.symlink_to(base)
    return folder


@dataclass
class _Invocation:
    request_id: str
    event: dict[str, Any]
    function_arn: str
    deadline_ms: int
    done: threading.Event = field(default_factory=threading.Event)
    response: Any = None
    error: dict[str, Any] | None = None


class RuntimeApi:
    """The Lambda Runtime API for one execution environment (one invocation at a time)."""

    def __init__(self) -> None:
        self._pending: queue.Queue[_Invocation] = queue.Queue()
        self._running: dict[str, _Invocation] = {}
        self.init_error: dict[str, Any] | None = None
        self.init_failed = threading.Event()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="runtime-api", daemon=True)

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    def __enter__(self) -> RuntimeApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    def invoke(self, event: dict[str, Any], *, function_arn: str, timeout_s: float, process: Process) -> Any:
        """Hands ``event`` to the next GET /next and waits for the response the handler posts."""
        invocation = _Invocation(str(uuid.uuid4()), event, function_arn, int((time.time() + timeout_s) * 1000))
        self._pending.put(invocation)
        deadline = time.monotonic() + timeout_s
        while not invocation.done.wait(0.1):
            if self.init_failed.is_set():
                raise LambdaStartFailed(f"init error: {json.dumps(self.init_error)}\n{process.output()}")
            if process.exited():
                raise LambdaStartFailed(f"the runtime exited ({process.returncode()}):\n{process.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no response within {timeout_s} s:\n{process.output()}")
        if invocation.error is not None:
            raise InvocationFailed(json.dumps(invocation.error))
        return invocation.response

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path != "/2018-06-01/runtime/invocation/next":
                    return self._answer(404, {"errorMessage": f"unknown path {self.path}"})
                # Lambda holds this request until an event arrives (the client's read has no
                # timeout); the short waits only let a stopping server end this thread.
                while True:
                    try:
                        invocation = api._pending.get(timeout=NEXT_POLL_S)
                        break
                    except queue.Empty:
                        if api._closing.is_set():
                            # The runtime is stopped (or was killed) before its API: nobody reads this.
                            with contextlib.suppress(OSError):
                                self._answer(503, {"errorMessage": "shutting down"})
                            return
                api._running[invocation.request_id] = invocation
                self._answer(
                    200,
                    invocation.event,
                    {
                        "Lambda-Runtime-Aws-Request-Id": invocation.request_id,
                        "Lambda-Runtime-Deadline-Ms": str(invocation.deadline_ms),
                        "Lambda-Runtime-Invoked-Function-Arn": invocation.function_arn,
                        "Lambda-Runtime-Trace-Id": "Root=1-00000000-000000000000000000000000;Sampled=0",
                    },
                )

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                document = json.loads(body) if body else None
                parts = self.path.strip("/").split("/")  # 2018-06-01/runtime/invocation/<id>/response
                if parts[2:] == ["init", "error"]:
                    api.init_error = document
                    api.init_failed.set()
                elif len(parts) == 5 and parts[2] == "invocation" and parts[4] in ("response", "error"):
                    invocation = api._running.pop(parts[3])
                    if parts[4] == "response":
                        invocation.response = document
                    else:
                        invocation.error = document
                    invocation.done.set()
                else:
                    return self._answer(404, {"errorMessage": f"unknown path {self.path}"})
                self._answer(202, {"status": "OK"})

            def _answer(self, status: int, document: Any, extra: Mapping[str, str] | None = None) -> None:
                payload = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

        return Handler


class Process:
    """A function's process, its output collected in a file (read when something fails)."""

    def __init__(self, command: list[str], *, cwd: Path, env: Mapping[str, str]) -> None:
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop(), after the process
        self._popen = subprocess.Popen(command, cwd=cwd, env=dict(env), stdout=self._log, stderr=subprocess.STDOUT)

    def exited(self) -> bool:
        return self._popen.poll() is not None

    def returncode(self) -> int | None:
        return self._popen.poll()

    def output(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-6000:]

    def kill(self) -> None:
        """SIGKILL, as Lambda ends an environment that timed out or ran out of memory: nothing
        of the process runs after it (no handler, no flush)."""
        self._popen.kill()
        self._popen.wait()

    def stop(self) -> None:
        if not self.exited():
            self._popen.terminate()
            try:
                self._popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._popen.kill()
                self._popen.wait()
        self._log.close()


@dataclass
class EventFunction:
    function: DeployedFunction
    api: RuntimeApi
    process: Process

    def invoke(self, event: dict[str, Any]) -> Any:
        return self.api.invoke(
            event, function_arn=self.function.arn, timeout_s=self.function.timeout_s, process=self.process
        )


@contextmanager
def started_event_function(function: DeployedFunction) -> Iterator[EventFunction]:
    """The function under the runtime interface client, polling a Runtime API of its own."""
    with RuntimeApi() as api:
        env = function.lambda_environment(AWS_LAMBDA_RUNTIME_API=api.address)
        command = [str(interpreter_bin() / "python3"), "-m", "awslambdaric", function.handler]
        process = Process(command, cwd=function.task_root, env=env)
        try:
            yield EventFunction(function, api, process)
        finally:
            process.stop()


@dataclass
class WebFunction:
    function: DeployedFunction
    base_url: str
    process: Process


@contextmanager
def started_web_function(
    function: DeployedFunction, *, port: int, ready_path: str, timeout_s: float = 60
) -> Iterator[WebFunction]:
    """The function's handler script (``run.sh``) started as the Web Adapter starts it, on ``port``,
    ready once ``ready_path`` answers 200 (the adapter's readiness check)."""
    env = function.lambda_environment(AWS_LWA_PORT=str(port))
    process = Process(["/bin/bash", str(function.task_root / function.handler)], cwd=function.task_root, env=env)
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.exited():
                raise LambdaStartFailed(f"{function.handler} exited ({process.returncode()}):\n{process.output()}")
            try:
                if httpx.get(base_url + ready_path, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise LambdaStartFailed(f"{ready_path} never answered 200 within {timeout_s} s:\n{process.output()}")
            time.sleep(0.1)
        yield WebFunction(function, base_url, process)
    finally:
        process.stop()


class ExecutionEnvironments:
    """A function's execution environments as Lambda keeps them for one event source mapping: one
    warm environment serves invocation after invocation; once it is gone (killed), the next
    invocation cold-starts a fresh one. ``invoke`` is what a mapping calls (local/mapping.py,
    local/queue_poller.py); an invocation whose environment dies fails as a function error."""

    def __init__(self, function: DeployedFunction) -> None:
        self.function = function
        self.started = 0  # environments started so far
        self._stack = ExitStack()
        self._current: EventFunction | None = None
        self._may_start = threading.Event()
        self._may_start.set()

    def invoke(self, event: dict[str, Any]) -> Any:
        if self._current is None or self._current.process.exited():
            if not self._may_start.wait(timeout=self.function.timeout_s):
                raise AssertionError("no environment may start: a kill never finished")
            self._current = self._stack.enter_context(started_event_function(self.function))
            self.started += 1
        return self._current.invoke(event)

    def kill(self, then: Callable[[], None] = lambda: None) -> None:
        """SIGKILL the running environment; ``then`` runs before a fresh one may start (dropping
        the call the dead one had in flight, say, so that only the dead one's call is dropped)."""
        assert self._current is not None, "no environment is running"
        self._may_start.clear()
        try:
            self._current.process.kill()
            then()
        finally:
            self._may_start.set()

    def close(self) -> None:
        self._stack.close()


@contextmanager
def execution_environments(function: DeployedFunction) -> Iterator[ExecutionEnvironments]:
    environments = ExecutionEnvironments(function)
    try:
        yield environments
    finally:
        environments.close()
