"""Two releases at once (docs/operating/upgrades.md, "Two versions at once"): what a previous release
stored, recorded by its own code (tests/support/stored_formats.py, one JSON file per release), is
served by today's code. Its sessions (2026 handle and 2025 transport session), notes, counters,
tool-call records and replay markers are read and committed on by today's endpoint; its task is
read by today's task store; its tool-call and expiry events are ingested by today's ingest into
exactly the items the previous ingest wrote, and counted once; its usage is read by the usage
command. The audit side is tests/integration/audit/test_audit_previous_release_items.py."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.tasks import TaskStore
from mcp_platform.application.events.stream_events import decode_stream_event
from mcp_platform.bootstrap.ingest import build_ingestor
from mcp_platform.config import EnvVars
from mcp_platform.ops.usage import UsageCommands
from tests.support.aws import fake_credentials
from tests.support.endpoint import AwsStack, aws_stack, endpoint_instance
from tests.support.mcp_http import CAPS_META, final_message, modern_call
from tests.support.stored_formats import QUOTAS, items_now, recorded_releases

pytestmark = [pytest.mark.integration]
INGESTED = (ts.EVENT_DEDUPE_PREFIX, ts.USAGE_PREFIX)  # what ingest writes from the events


@pytest.fixture(params=recorded_releases(), ids=lambda path: path.stem)
def recorded(request: pytest.FixtureRequest) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(request.param.read_text())
    return found


@pytest.fixture
def aws() -> Iterator[AwsStack]:
    with fake_credentials(), aws_stack() as stack:
        yield stack


def load(aws: AwsStack, items: list[dict[str, Any]]) -> None:
    dynamodb = aws.client("dynamodb")
    for item in items:
        dynamodb.put_item(TableName=aws.table, Item=item)


def is_ingested(item: dict[str, Any]) -> bool:
    return item[ts.PK]["S"].startswith(INGESTED)


def modern_tool(url: str, key: str, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": CAPS_META}
    message = final_message(modern_call(url, key, request_id, "tools/call", params))
    assert "result" in message and not message["result"].get("isError"), message
    structured: dict[str, Any] = message["result"]["structuredContent"]
    return structured


def test_a_previous_releases_sessions_and_task_are_served_by_todays_code(
    aws: AwsStack, recorded: dict[str, Any]
) -> None:
    load(aws, items_now(recorded, time.time()))
    key, handle, transport = recorded["api_key"], recorded["application_session"], recorded["transport_session"]
    with endpoint_instance(aws) as instance:
        url = instance.url
        # The 2026 session: its note is read, its counter goes on from where it was, a note commits.
        notes = modern_tool(url, key, 1, "read_notes", {"session": handle})
        assert [note["text"] for note in notes["notes"]] == ["a note of the previous release"]
        assert modern_tool(url, key, 2, "increment_counter", {"session": handle, "name": "visits"})["value"] == 3
        modern_tool(url, key, 3, "append_note", {"session": handle, "text": "a note of today's release"})
        assert modern_tool(url, key, 4, "read_notes", {"session": handle})["total"] == 2

        # The 2025 transport session is still valid, and its call replays from the stored marker.
        headers = {
            "Authorization": f"Bearer {key}",
            "Accept": "application/json, text/event-stream",
            "Mcp-Session-Id": transport,
            "MCP-Protocol-Version": "2025-11-25",
        }
        replayed = httpx.post(url, json=recorded["legacy_call"], headers=headers, timeout=30)
        assert replayed.status_code == 200, replayed.text
        answer = [line for line in replayed.text.splitlines() if line.startswith("data:") and '"id"' in line]
        recorded_answer = [line for line in recorded["legacy_answer"].splitlines() if line.startswith("data:")]
        assert [json.loads(line[5:]) for line in answer] == [json.loads(line[5:]) for line in recorded_answer]
        read = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "read_notes", "arguments": {}}}
        notes_2025 = final_message(httpx.post(url, json=read, headers=headers, timeout=30))["result"]
        assert notes_2025["structuredContent"]["total"] == 1  # the replay committed nothing again

        # The task, completed by the previous release, reads back whole for its owner.
        task = TaskStore(aws.table, instance.endpoint.store.gateway).get(recorded["task_id"], recorded["principal"])
        assert (task.status, task.result) == ("completed", recorded["task_result"])


def test_todays_ingest_writes_what_the_previous_ingest_wrote_from_its_events(
    aws: AwsStack, recorded: dict[str, Any]
) -> None:
    """Given the previous release's items without what its ingest made of its events, when today's
    ingest reads those events, then every event decodes, and the dedupe markers, usage counters and
    quota totals it writes are the previous ingest's, item for item (their expiry aside); read
    again, nothing is counted twice, and the usage command reads the counts."""
    now = time.time()
    items = items_now(recorded, now)
    load(aws, [item for item in items if not is_ingested(item)])
    for event in recorded["events"]:
        decode_stream_event(base64.b64decode(event["data"]))
    ingestor = build_ingestor(aws.settings(**{EnvVars.QUOTAS: QUOTAS}), dynamodb=aws.client("dynamodb"))
    outcomes = [ingestor.ingest_record(event["data"]) for event in recorded["events"]]
    tool_calls = [o for o in outcomes if o.event_type == "tool.call"]
    assert len(tool_calls) == len(recorded["events"]) - 1 and all(o.counted for o in tool_calls)

    def without_ttl(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # A marker's expiry is counted from when it is written: today, not at the recording.
        return sorted(
            ({k: v for k, v in item.items() if k != ts.TTL} for item in found if is_ingested(item)),
            key=lambda item: (item[ts.PK]["S"], item[ts.SK]["S"]),
        )

    written = aws.client("dynamodb").scan(TableName=aws.table, ConsistentRead=True)["Items"]
    assert without_ttl(written) == without_ttl(items)
    assert not any(ingestor.ingest_record(event["data"]).counted for event in recorded["events"])
    usage = UsageCommands(aws.client("dynamodb"), aws.table)
    day = json.loads(base64.b64decode(recorded["events"][0]["data"]))["started_at"][:10]  # the calls' UTC day
    report = usage.show(recorded["principal"], month=day[:7], today=day)
    assert sum(row.calls for row in report.days) == len(tool_calls)
    assert report.totals.month == len(tool_calls)
