"""What one release stores, recorded once, so later releases prove they still read it.

During a canary (and after a rollback) two releases share one table, one stream and one queue
(docs/operating/upgrades.md, "Two versions at once"). This module records, with the code of the
release it runs in, every kind of item and event that release writes: an API key, a 2026
application session with a note and a counter (metadata item, tool-call records and markers), a
2025 transport session with a note, a completed task, the tool-call events on the stream and a
``session.expired`` event, then what ingest makes of the events (dedupe markers, usage counters and
quota totals). The JSON it writes is committed, one file per release, and never regenerated:
tests/integration/sessions/test_previous_release_formats.py replays every file through the code of
today. When a release changes what it stores, record its formats into a new file:

    .venv/bin/python -m tests.support.stored_formats        # writes recorded_formats/v<version>.json
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
FORMATS_DIR = Path(__file__).resolve().parent / "recorded_formats"
PRINCIPAL = "compat-principal"
API_KEY = "mcpk_stored_formats_0123456789abcdef0123456789abcdef"  # a fixture's key, never deployed
TASK_ID = "stored-formats-task-0001"
QUOTAS = '{"principal": "1000/day"}'


def project_version() -> str:
    found = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    assert found is not None
    return found[1]


def _post(url: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    sent = {"Authorization": f"Bearer {API_KEY}", "Accept": "application/json, text/event-stream", **headers}
    response = httpx.post(url, json=body, headers=sent, timeout=30)
    assert response.status_code in (200, 202), response.text
    return response


def _modern_tool(url: str, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    from tests.support.mcp_http import CAPS_META, final_message

    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": CAPS_META},
    }
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name}
    message = final_message(_post(url, body, headers))
    assert not message["result"].get("isError"), message
    result: dict[str, Any] = message["result"]
    return result


def record() -> dict[str, Any]:
    """Runs today's endpoint, task store and ingest on an emulator and returns what they stored."""
    from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
    from mcp_platform.adapters.dynamodb.tasks import TaskStore
    from mcp_platform.adapters.kinesis.audit_publisher import KinesisEventPublisher
    from mcp_platform.application.events.stream_events import SessionExpiredEvent
    from mcp_platform.bootstrap.ingest import build_ingestor
    from mcp_platform.config import EnvVars
    from mcp_platform.protocol.tasks import TaskRequest
    from tests.support.aws import fake_credentials
    from tests.support.endpoint import aws_stack, endpoint_instance
    from tests.support.kinesis import read_whole_stream
    from tests.support.mcp_http import initialize

    with fake_credentials(), aws_stack() as aws, endpoint_instance(aws) as instance:
        dynamodb = aws.client("dynamodb")
        ApiKeyStore(aws.table, dynamodb).mint(PRINCIPAL, label="stored formats", key=API_KEY)
        url = instance.url
        # 2026: an application session, a note appended, a counter incremented twice.
        handle = _modern_tool(url, 1, "open_session", {"title": "stored formats"})["structuredContent"]["session"]
        _modern_tool(url, 2, "append_note", {"session": handle, "text": "a note of the previous release"})
        for request_id in (3, 4):
            _modern_tool(url, request_id, "increment_counter", {"session": handle, "name": "visits"})
        # 2025: a transport session and a note in it, its request kept for the replay.
        transport = initialize(url, API_KEY)
        legacy = {"Mcp-Session-Id": transport, "MCP-Protocol-Version": "2025-11-25"}
        _post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, legacy)
        legacy_call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "append_note", "arguments": {"text": "a 2025 note of the previous release"}},
        }
        legacy_answer = _post(url, legacy_call, legacy).text
        # A task, created and completed as the worker completes one.
        tasks = TaskStore(aws.table, instance.endpoint.store.gateway)
        request = TaskRequest(
            params={"name": "countdown", "arguments": {"steps": 1, "interval_ms": 0}},
            tool_call_id="stored-formats-task-call",
            protocol_version="2026-07-28",
            modern=True,
        )
        tasks.create(tasks.new_task(TASK_ID, PRINCIPAL, request, ttl_seconds=3600))
        tasks.begin_attempt(TASK_ID)
        task_result = {"content": [{"type": "text", "text": "counted 1 steps"}], "isError": False}
        tasks.finish(TASK_ID, "completed", result=task_result)
        # A4's event as the audit function publishes it when a session expires.
        expired = SessionExpiredEvent(
            session_id=handle,
            sequence_number="49650000000000000000000000000000000000000000000000000001",
            removed_at="2026-01-01T00:00:00+00:00",
            owner=PRINCIPAL,
            kind="application",
            tool_calls=3,
        )
        KinesisEventPublisher(aws.client("kinesis"), aws.stream).publish(expired.to_dict())
        time.sleep(0.5)  # the endpoint flushes each call's event after its answer's last byte
        records = read_whole_stream(aws.client("kinesis"), aws.stream)
        events = [{"data": base64.b64encode(r["Data"]).decode(), "partition_key": r["PartitionKey"]} for r in records]
        # With quotas on, ingest keeps the quota totals too (an item of its own).
        ingestor = build_ingestor(aws.settings(**{EnvVars.QUOTAS: QUOTAS}), dynamodb=dynamodb)
        for event in events:
            ingestor.ingest_record(event["data"])
        items = dynamodb.scan(TableName=aws.table, ConsistentRead=True)["Items"]
    return {
        "release": project_version(),
        "recorded_at": int(time.time()),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip(),
        "principal": PRINCIPAL,
        "api_key": API_KEY,
        "application_session": handle,
        "transport_session": transport,
        "legacy_call": legacy_call,
        "legacy_answer": legacy_answer,
        "task_id": TASK_ID,
        "task_result": task_result,
        "items": sorted(items, key=lambda item: (item["pk"]["S"], item["sk"]["S"])),
        "events": events,
    }


def recorded_releases() -> list[Path]:
    """Every release's recorded formats, oldest first."""
    return sorted(FORMATS_DIR.glob("v*.json"))


def items_now(recorded: dict[str, Any], now: float) -> list[dict[str, Any]]:
    """The recorded items as if written just now: only the expiry times (``ttl``) move, by the
    time since the recording, so nothing is expired by the calendar; every format stays as stored."""
    shift = int(now) - int(recorded["recorded_at"])
    items = json.loads(json.dumps(recorded["items"]))
    for item in items:
        if "ttl" in item:
            item["ttl"] = {"N": str(int(item["ttl"]["N"]) + shift)}
    return list(items)


def main() -> int:
    from local.bootstrap import add_import_roots

    add_import_roots()  # the layer and the functions, as the test run's pythonpath has them
    recorded = record()
    path = FORMATS_DIR / f"v{recorded['release']}.json"
    if path.exists():
        print(f"{path} exists: a release's formats are recorded once (bump the version in pyproject.toml)")
        return 1
    FORMATS_DIR.mkdir(exist_ok=True)
    path.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(f"{path}: {len(recorded['items'])} items, {len(recorded['events'])} events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
