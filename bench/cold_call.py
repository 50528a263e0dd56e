"""One cold start in one process, for counting its instructions: import the launcher the
endpoint runs under (run.sh: ``mcp_platform.transport.serving``) and the app, run the app's
lifespan startup, and send one 2026-07-28 ``tools/call`` of ``echo`` through the ASGI interface;
the process ends the moment the client holds the whole answer (its Content-Length, else the last
byte): the call's event is flushed after that, before the response ends, and is not the client's
wait.

``python cold_call.py MODULE:APP`` exits 0 only when the call was answered with a result. Run
under ``valgrind --tool=callgrind``, its instruction count is the CPU work of a cold start to the
first answer, whatever else the machine is doing (bench_endpoint.py compares ours with the SDK's).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
from typing import Any

import mcp_platform.transport.serving  # noqa: F401  the launcher both sides run under

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
HEADERS = {
    "accept": "application/json",
    "content-type": "application/json",
    "host": "127.0.0.1:8000",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}
BODY = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": META},
}


async def lifespan(app: Any, stop: asyncio.Event) -> asyncio.Task[None]:
    """The app's startup, run as the server runs it (its shutdown waits on ``stop``)."""
    started = asyncio.Event()
    messages = [{"type": "lifespan.startup"}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await stop.wait()
        return {"type": "lifespan.shutdown"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"].startswith("lifespan.startup"):
            started.set()

    task = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send))
    await started.wait()
    return task


async def one_call(app: Any) -> None:
    payload = json.dumps(BODY).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": [(name.encode(), value.encode()) for name, value in HEADERS.items()],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
        "scheme": "http",
        "http_version": "1.1",
        "asgi": {"version": "3.0"},
        "state": {},
    }
    sent = False
    out: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": payload, "more_body": False}
        await asyncio.Event().wait()  # connected until the answer ends the process
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        out.append(message)
        if message["type"] != "http.response.body":
            return
        answer = b"".join(part.get("body", b"") for part in out[1:]).decode()
        length = dict(out[0]["headers"]).get(b"content-length")
        # The client holds the whole answer at its last byte: its Content-Length, else the end.
        if (length is not None and len(answer.encode()) >= int(length)) or not message.get("more_body"):
            answered = out[0]["status"] == 200 and '"result"' in answer
            if not answered:
                print(f"not answered: {out[0]['status']} {answer[:200]}", file=sys.stderr, flush=True)
            os._exit(0 if answered else 1)

    await app(scope, receive, send)
    raise SystemExit("the app returned without answering")


async def main(target: str) -> None:
    module, attribute = target.split(":")
    app = getattr(importlib.import_module(module), attribute)
    await lifespan(app, asyncio.Event())
    await one_call(app)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
