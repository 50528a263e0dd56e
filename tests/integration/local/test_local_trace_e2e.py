"""A call followed by its trace id on `python -m local`: a tools/call sent with a W3C
``traceparent`` in its ``_meta`` to a session tool (append_note, 2025 era) is found by that trace
id in the endpoint's log (its EMF line as deployed, and the console's compact line), in the
tool-call event on the Kinesis stream, in the records (the tool-call record of the commit and
ingest's dedupe marker) and in the audit records of the session changes; and
`python -m local.trace <trace id>` prints that journey from the running emulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from local.resources import local_name
from mcp_platform.adapters.dynamodb import table_schema as ts
from tests.support.kinesis import read_whole_stream
from tests.support.local_platform import ROOT, LocalPlatform, local_platform, wait_for
from tests.support.session_stream import audit_records

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("local_platform")]
STAGE = "dev"  # cdk.json's default stage, which `python -m local` synthesizes
PIPELINE_DEADLINE_S = 45
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("local-trace-logs")


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, logs: Path) -> Iterator[LocalPlatform]:
    with local_platform(tmp_path_factory.mktemp("local-trace"), {"LOCAL_LOG_DIR": str(logs)}) as running:
        yield running


def call_append_note_with_traceparent(platform: LocalPlatform, text: str) -> str:
    """2025: initialize, then append_note in the transport session (its Mcp-Session-Id is the
    session handle) with the caller's span in ``_meta``; returns the session id."""
    headers = {"Authorization": f"Bearer {platform.api_key}", "Accept": "application/json, text/event-stream"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}},
    }
    opened = httpx.post(platform.mcp_url, headers=headers, json=initialize, timeout=30)
    session_id = opened.headers["mcp-session-id"]
    headers.update({"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"})
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx.post(platform.mcp_url, headers=headers, json=initialized, timeout=30).status_code == 202
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "append_note",
            "arguments": {"text": text, "session": session_id},
            "_meta": {"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"},
        },
    }
    answered = httpx.post(platform.mcp_url, headers=headers, json=call, timeout=30)
    assert answered.status_code == 200 and '"isError":false' in answered.text, answered.text
    return session_id


def traced_items(platform: LocalPlatform, table_logical_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = platform.aws("dynamodb").scan(
        TableName=local_name(STAGE, table_logical_id),
        FilterExpression="trace_id = :t",
        ExpressionAttributeValues={":t": {"S": TRACE_ID}},
        ConsistentRead=True,
    )["Items"]
    return items


def test_a_traced_call_is_found_by_its_trace_id_at_every_stage(platform: LocalPlatform, logs: Path) -> None:
    # Given the local platform / When a session tool is called with a traceparent in _meta
    session_id = call_append_note_with_traceparent(platform, "traced note")
    session_pk = ts.session_pk(session_id)

    # Then the endpoint's log file holds the call's EMF line, naming the tool and the trace
    aws_port = platform.aws_url.rsplit(":", 1)[1]

    def emf_line() -> dict[str, Any] | None:
        for path in (logs / f"aws-{aws_port}").glob("endpoint-*.jsonl"):
            for text in path.read_text().splitlines():
                line = json.loads(text)
                if line.get("trace_id") == TRACE_ID and line.get("gen_ai.tool.name") == "append_note":
                    return dict(line)
        return None

    operation = wait_for(emf_line, PIPELINE_DEADLINE_S, "the call's EMF line in the endpoint log")
    span_id = operation["span_id"]
    assert span_id != CALLER_SPAN and operation["mcp.method.name"] == "tools/call"
    # and the console (make dev's output) its compact line, printed just after the file's line

    def console_line() -> bool:
        console = platform.log_path.read_text().splitlines()
        return any("append_note" in line and line.endswith(f"trace {TRACE_ID}") for line in console)

    wait_for(console_line, PIPELINE_DEADLINE_S, "the call's line on make dev's console")

    # And the Kinesis stream carries the call's event with the trace and the request's span
    def stream_event() -> dict[str, Any] | None:
        for record in read_whole_stream(platform.aws("kinesis"), local_name(STAGE, "EventsStream")):
            event = json.loads(record["Data"])
            if event.get("trace_id") == TRACE_ID:
                return dict(event)
        return None

    event = wait_for(stream_event, PIPELINE_DEADLINE_S, "the tool-call event on the stream")
    assert (event["tool"], event["session_id"], event["span_id"]) == ("append_note", session_id, span_id)

    # And the records: the commit's tool-call record and ingest's dedupe marker name the trace
    def recorded() -> dict[str, dict[str, Any]] | None:
        found = {item[ts.SK]["S"].split("#")[0]: item for item in traced_items(platform, "DataSessionTable")}
        return found if {"tool", "dedupe"} <= found.keys() else None

    records = wait_for(recorded, PIPELINE_DEADLINE_S, "the tool-call record and ingest's dedupe marker")
    assert records["tool"][ts.PK]["S"] == session_pk
    assert records["dedupe"][ts.PK]["S"] == ts.event_dedupe_pk(event["event_id"])
    assert all(item[ts.SPAN_ID]["S"] == span_id for item in records.values())

    # And the audit records of the commit's four changes (record, marker: a 2025 call's id is its
    # request's, which a retry carries; metadata; the context item of the note it appended) name it
    def audited() -> list[dict[str, Any]] | None:
        found = traced_items(platform, "DataAuditTable")
        return found if len(found) >= 4 else None

    audit = wait_for(audited, PIPELINE_DEADLINE_S, "the audit records of the call's changes")
    assert {item[ts.AUDIT_PK]["S"] for item in audit} == {session_pk}
    assert sorted(r["item"].split("#")[0] for r in audit_records(audit)) == ["ctx", "metadata", "tool", "toolcall"]

    # And `python -m local.trace` prints the journey, every stage naming what it found
    env = {**os.environ, "LOCAL_AWS_PORT": aws_port, "LOCAL_LOG_DIR": str(logs)}
    shown = subprocess.run(
        [sys.executable, "-m", "local.trace", TRACE_ID], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    assert shown.returncode == 0, shown.stderr[-3000:]
    journey = shown.stdout
    stages = ["endpoint log", "kinesis", "ingest: session table", "audit"]
    assert [journey.index(stage) for stage in stages] == sorted(journey.index(stage) for stage in stages)
    assert "EMF   tools/call" in journey and "append_note" in journey
    assert "tool.call append_note ok" in journey
    assert "tool-call record (written by the endpoint's commit)" in journey
    assert "ingest dedupe marker" in journey
    assert journey.count(f"{session_pk} / ") >= 3 + 3  # the session's traced items, then its audit records
    assert "(nothing yet)" not in journey


def test_verify_proves_the_running_platform_works(platform: LocalPlatform) -> None:
    """Given the running platform (its pipeline whole), when `python -m local.ops verify` runs
    against its URL with its key, then every check but the alarms passes (health, the 401, both
    eras, the streamed call's progress, the calls' events in ingest, the empty DLQs), the alarms
    line says why they were not checked, the JSON report says the same, and it exits 0."""
    report_path = platform.log_dir / "verify.json"
    shown = platform.local_ops(
        "verify", "--url", platform.mcp_url, "--key", platform.api_key, "--ingest-within", "45",
        "--report", str(report_path),
    )  # fmt: skip
    assert shown.returncode == 0, shown.stdout + shown.stderr[-3000:]
    report = json.loads(report_path.read_text())
    statuses = {check["name"]: check["status"] for check in report["checks"]}
    assert statuses == {
        "health": "pass",
        "unauthenticated": "pass",
        "2025": "pass",
        "2026": "pass",
        "streaming": "pass",
        "ingest": "pass",
        "dlq": "pass",
        "alarms": "skip",
    }, shown.stdout
    assert report["passed"] is True
    assert "call event(s) reached ingest" in shown.stdout
    assert "the local emulator has no CloudWatch alarms" in shown.stdout
    assert "verified: every check passed" in shown.stdout
