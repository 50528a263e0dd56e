"""The client side of `python -m local.soak`: the tool calls, and the wait for their audit records."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any, cast

from local.bootstrap import DUMMY_SECRET

AUDIT_DEADLINE_S = 120.0
AUDIT_TABLE = "mcp-dev-data-audit-table"  # `python -m local` synthesizes the dev stage


def drive(
    urls: list[str], api_key: str, calls: int, per_session: int, tick: Callable[[int], None]
) -> tuple[list[float], dict[str, int]]:
    """The calls, in order, over one client per endpoint: (latency of each, calls per session)."""
    import anyio
    import httpx2
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client

    latencies: list[float] = []
    sessions: dict[str, int] = {}

    async def run() -> None:
        async with AsyncExitStack() as stack:
            clients: list[Client] = []
            for url in urls:
                http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {api_key}"}, timeout=60)
                client = Client(streamable_http_client(url, http_client=http), mode="2026-07-28")
                clients.append(await stack.enter_async_context(client))
            handle = ""
            for n in range(calls):
                if n % per_session == 0:
                    opened = await clients[0].call_tool("open_session", {})
                    handle = str(cast(dict[str, Any], opened.structured_content)["session"])
                    sessions[handle] = 0
                began = time.perf_counter()
                result = await clients[n % len(clients)].call_tool("append_note", {"text": f"n{n}", "session": handle})
                latencies.append(time.perf_counter() - began)
                if result.is_error:
                    raise RuntimeError(f"append_note #{n} failed: {result.content}")
                sessions[handle] += 1
                tick(n + 1)

    anyio.run(run)
    return latencies, sessions


def await_audit(endpoint_url: str, sessions: dict[str, int], drained: Callable[[], bool]) -> tuple[float | None, int]:
    """Waits until every call's tool-call record (sk tool#...) has its audit record (the change of
    that item): (seconds after which they all existed, or None if not within AUDIT_DEADLINE_S;
    calls without one). The emulator answers a Scan at a cost growing with the table, so a
    pass runs only once ``drained()`` (the platform's own pipeline lag, cheap) says it may pass."""
    import boto3

    dynamodb = boto3.client(
        "dynamodb", endpoint_url=endpoint_url, region_name="us-east-1",
        aws_access_key_id=DUMMY_SECRET, aws_secret_access_key=DUMMY_SECRET,
    )  # fmt: skip
    from mcp_platform.adapters.dynamodb.audit_trail import to_record
    from mcp_platform.adapters.dynamodb.audit_writer import EVENT_NAME

    # The changed item's key is read as the trail reads it: an item stores it only when its
    # images do not give it back (docs/operating/upgrades.md, "The audit item").
    started, missing = time.monotonic(), -1
    while True:
        overdue = time.monotonic() - started > AUDIT_DEADLINE_S
        if drained() or overdue:
            checked_at = time.monotonic() - started  # records are only ever added: all existed by then
            audited: dict[str, set[str]] = {}
            for page in dynamodb.get_paginator("scan").paginate(TableName=AUDIT_TABLE):
                for item in page["Items"]:
                    changed = (to_record(item)["item"] if EVENT_NAME in item else None) or ""
                    if changed.startswith("tool#"):
                        audited.setdefault(item["pk"]["S"].removeprefix("session#"), set()).add(changed)
            missing = sum(max(0, calls - len(audited.get(session, ()))) for session, calls in sessions.items())
            if not missing:
                return checked_at, 0
        if overdue:
            return None, missing
