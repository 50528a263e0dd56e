"""Parallel tool calls on one session: two in-process instances on one local emulator.

Correctness first (how many of 8 parallel calls succeed), then wall time. The peer is the same
8 calls under the version-conditioned commit (what every commit was before effects), in the
same run. Wall times are the emulator's more than ours: moto serialises requests and copies
the table per transaction, so read them as a comparison, not as DynamoDB latency.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT / "layers/platform/python", ROOT / "functions/endpoint", ROOT, ROOT / "bench"):
    sys.path.insert(0, str(extra))

from common import row  # noqa: E402
from fakes import FakeKinesis, FakeSqs, asgi_post  # noqa: E402

PARALLEL = 8
MODERN = {
    "authorization": "Bearer bench-key",
    "accept": "application/json",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


@contextlib.contextmanager
def _emulator() -> Iterator[Any]:
    import boto3
    from botocore.config import Config

    from local.atomic_moto import AtomicMotoServer
    from tests.support.aws import free_port
    from tests.support.tables import create_session_table

    port = free_port()
    server = AtomicMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        client = boto3.client(
            "dynamodb",
            region_name="us-east-1",
            endpoint_url=f"http://127.0.0.1:{port}",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
            config=Config(retries={"max_attempts": 1}, max_pool_connections=32),
        )
        create_session_table(client, "bench")
        yield client
    finally:
        server.stop()


def _instance(dynamodb: Any) -> Any:
    from mcp_platform.bootstrap.endpoint import build_app
    from mcp_platform.config import Settings
    from tests.support import platform_tools

    settings = Settings.from_mapping(
        {
            "SESSION_TABLE_NAME": "bench",
            "EVENT_STREAM_NAME": "bench",
            "PRODUCER_DLQ_URL": "dlq",
            "AWS_REGION": "us-east-1",
        }
    )
    sink = io.StringIO()  # metric lines: written, not printed
    return build_app(
        settings, platform_tools, dynamodb=dynamodb, kinesis=FakeKinesis(), sqs=FakeSqs(), metrics_stream=sink
    )


async def _tool(app: Any, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": META},
    }
    _, _, raw = await asgi_post(app, "/mcp", {**MODERN, "mcp-name": name}, body)
    answer: dict[str, Any] = json.loads(raw)
    return answer


def _ok(answer: dict[str, Any]) -> bool:
    return "result" in answer and not answer["result"].get("isError")


async def _burst(apps: list[Any], name: str, arguments: dict[str, Any]) -> tuple[int, float]:
    opened = await _tool(apps[0], 1, "open_session", {})
    handle = opened["result"]["structuredContent"]["session"]
    started = time.perf_counter()
    answers = await asyncio.gather(
        *(
            _tool(
                apps[i % 2],
                10 + i,
                name,
                {**arguments, "session": handle, "text": f"n{i}"}
                if name == "append_note"
                else {**arguments, "session": handle},
            )
            for i in range(PARALLEL)
        )
    )
    return sum(_ok(a) for a in answers), time.perf_counter() - started


def run() -> list[dict[str, Any]]:
    from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
    from mcp_platform.adapters.dynamodb.sessions import SessionChanges, SessionStore
    from mcp_platform.protocol.tools import READ_MODIFY_WRITE

    results: dict[str, tuple[int, float]] = {}
    with _emulator() as dynamodb:
        ApiKeyStore("bench", dynamodb).mint("bench", key="bench-key")
        apps = [_instance(dynamodb), _instance(dynamodb)]
        for name, arguments in (("append_note", {}), ("increment_counter", {"name": "hits"})):
            results[name] = asyncio.run(_burst(apps, name, arguments))
        original = SessionStore.commit

        def versioned(self: SessionStore, session: Any, record: Any, changes: SessionChanges) -> Any:
            return original(self, session, record, replace(changes, effect=READ_MODIFY_WRITE))

        SessionStore.commit = versioned  # type: ignore[method-assign]
        quiet = logging.getLogger("mcp_platform")
        level, quiet.level = quiet.level, logging.CRITICAL  # the peer's conflicts log tracebacks
        try:
            results["peer"] = asyncio.run(_burst(apps, "append_note", {}))
        finally:
            SessionStore.commit = original  # type: ignore[method-assign]
            quiet.setLevel(level)
    (ok, wall), (peer_ok, peer_wall) = results["append_note"], results["peer"]
    counter_ok, counter_wall = results["increment_counter"]
    rows = [
        row(
            f"{PARALLEL} parallel append_note, one session, 2 instances: succeeded",
            f"{ok}/{PARALLEL}",
            f"{peer_ok}/{PARALLEL}",
            "calls",
            f"same calls; ours commits append-only, the peer under the version condition (the commit before "
            f"declared effects); wall {wall * 1000:.0f} vs {peer_wall * 1000:.0f} ms on the emulator",
        ),
        row(
            f"{PARALLEL} parallel increment_counter, 2 instances: succeeded",
            f"{counter_ok}/{PARALLEL}",
            None,
            "calls",
            f"read-modify-write: a lost race runs again on the winning state; wall {counter_wall * 1000:.0f} ms",
        ),
    ]
    return rows
