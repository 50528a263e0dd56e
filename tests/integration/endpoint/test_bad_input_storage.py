"""Regression tests of issue 12 over HTTP, findings 1-4 and 6: what a request would have stored
or used as a key is admitted first. Each bad input gets a specific tool error or 4xx, stores
nothing it should not, and never becomes a 5xx or -32603.

Findings 5, 7 and 8 (headers, body timeout, long calls): ``test_bad_input_transport.py``; the
generated corpus: ``test_bad_input_battery.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import from_attr
from mcp_platform.protocol.jsonrpc import INVALID_PARAMS, LIMIT_EXCEEDED, SESSION_NOT_FOUND
from mcp_platform.protocol.versions import IDEMPOTENCY_KEY_META
from tests.support.audit_stream import audit_everything
from tests.support.endpoint import AwsStack, Instance, endpoint_instance
from tests.support.hostile import modern_post, post
from tests.support.hostile import tool_answer as tool
from tests.support.mcp_http import CAPS_META, call, final_message, headers, initialize

pytestmark = pytest.mark.integration


def open_handle(instance: Instance, key: str) -> str:
    return str(tool(instance, key, 1, "open_session", {})["result"]["structuredContent"]["session"])


def session_sks(aws: AwsStack, session_id: str) -> list[str]:
    items = aws.client("dynamodb").query(
        TableName=aws.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": ts.session_pk(session_id)}},
        ConsistentRead=True,
    )["Items"]
    return sorted(item["sk"]["S"] for item in items)


@pytest.fixture(scope="module")
def roomy(aws: AwsStack) -> Iterator[Instance]:
    """An instance that accepts 1 MiB bodies (the default), so oversized arguments reach it."""
    with endpoint_instance(aws, MCP_MAX_REQUEST_BYTES="1048576") as running:
        yield running


# -- finding 1: a number the audit cannot read never reaches the table ----------------------------
def test_f1_an_unreadable_number_is_refused_and_every_stored_change_is_auditable(
    instance: Instance, aws: AwsStack, api_key: str
) -> None:
    """Given increment_counter by=10**38 (the tool refuses it: its isError result used to be
    committed with the argument, which the audit's 38-digit deserialiser cannot read, so the
    stream record went to the audit DLQ), Then the answer names arguments.by, and every record
    on the table's stream is processed by the audit function's logic."""
    handle = open_handle(instance, api_key)
    answer = tool(instance, api_key, 2, "increment_counter", {"session": handle, "by": 10**38})
    outcomes = audit_everything(aws)  # raises for a record the audit function cannot process
    assert outcomes and {outcome.action for outcome in outcomes} <= {"audited", "duplicate", "skipped"}
    assert answer["result"]["isError"] and "arguments.by" in answer["result"]["content"][0]["text"]


# -- finding 4: a full session answers the documented limit error -----------------------------------
def test_f4_notes_of_4000_characters_fill_the_session_with_limit_exceeded_never_internal_error(
    instance: Instance, api_key: str
) -> None:
    """DynamoDB's item limit used to be reached at about 100 notes of 4,000 characters (-32603
    from 50 on in the report); the context budget answers -31005 first, and reads go on."""
    handle = open_handle(instance, api_key)
    answers = [
        tool(instance, api_key, 10 + i, "append_note", {"session": handle, "text": "n" * 4000}) for i in range(60)
    ]
    errors = [a["error"] for a in answers if "error" in a]
    assert errors and all(e["code"] == LIMIT_EXCEEDED for e in errors), errors[:1]
    assert errors[0]["data"]["limit"] == "session_context_bytes"
    notes = tool(instance, api_key, 200, "read_notes", {"session": handle, "limit": 1})
    assert notes["result"]["structuredContent"]["total"] == len(answers) - len(errors)


# -- finding 2: malformed client input is a 4xx / -32602, never 503 ---------------------------------
def test_f2_initialize_with_a_lone_surrogate_in_client_info_is_invalid_params_and_stores_nothing(
    instance: Instance, api_key: str
) -> None:
    """Given clientInfo.name "x\\ud800" (valid JSON, not storable as UTF-8), When initialize is
    posted, Then -32602 naming the field, no Mcp-Session-Id and no write (not 503 + Retry-After)."""
    gateway = instance.endpoint.store.gateway
    before = gateway.calls["put_item"]
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x\ud800", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    response = post(instance.url, headers(api_key).items(), body)
    assert response.status_code == 200, response.text
    error = response.json()["error"]
    assert error["code"] == INVALID_PARAMS and "clientInfo.name" in error["message"]
    assert "mcp-session-id" not in response.headers
    assert gateway.calls["put_item"] == before


@pytest.mark.parametrize("request_id", [{}, [1], 1.5], ids=["object", "array", "float"])
def test_f2_a_malformed_cancelled_request_id_is_400(instance: Instance, api_key: str, request_id: Any) -> None:
    session_id = initialize(instance.url, api_key)
    response = httpx.post(
        instance.url,
        headers=headers(api_key, **{"Mcp-Session-Id": session_id}),
        json={"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}},
    )
    assert response.status_code == 400 and response.json()["error"]["code"] == INVALID_PARAMS


def test_f2_an_idempotency_key_with_a_lone_surrogate_is_400_invalid_params(instance: Instance, api_key: str) -> None:
    handle = open_handle(instance, api_key)
    meta = {**CAPS_META, IDEMPOTENCY_KEY_META: "k\ud800"}
    params = {"name": "append_note", "arguments": {"session": handle, "text": "x"}, "_meta": meta}
    response = modern_post(instance.url, api_key, 2, "tools/call", params)
    assert response.status_code == 400 and response.json()["error"]["code"] == INVALID_PARAMS


# -- finding 3: oversized or unstorable arguments: a named isError, never -32603, nothing stored ------
@pytest.mark.parametrize("size", [300_000, 500_000])
def test_f3_an_oversized_argument_is_an_invalid_arguments_result_and_nothing_is_stored(
    roomy: Instance, aws: AwsStack, api_key: str, size: int
) -> None:
    """Given append_note with a text over the call-record budget (300 KB was stored whole, 500 KB
    passed DynamoDB's 400 KB item limit and answered -32603), Then an isError result naming
    arguments.text and the budget, and the session holds no tool-call item."""
    handle = open_handle(roomy, api_key)
    answer = tool(roomy, api_key, 2, "append_note", {"session": handle, "text": "x" * size})
    assert "result" in answer, answer["error"]
    text = answer["result"]["content"][0]["text"]
    assert answer["result"]["isError"] and "arguments.text" in text, text
    assert session_sks(aws, handle) == [ts.METADATA_SK]
    from mcp_platform.application.sessions.commit_plan import CALL_RECORD_BUDGET_BYTES

    assert str(CALL_RECORD_BUDGET_BYTES) in text


@pytest.mark.parametrize(
    ("name", "arguments", "named"),
    [
        ("read_notes", {"limit": 10**400}, "arguments.limit"),
        ("append_note", {"text": "bad \ud800"}, "arguments.text"),
        ("open_session", {"title": "t\udfff"}, "arguments.title"),
    ],
)
def test_f3_unstorable_arguments_are_a_named_isError_never_internal_error(
    instance: Instance, aws: AwsStack, api_key: str, name: str, arguments: dict[str, Any], named: str
) -> None:
    handle = open_handle(instance, api_key)
    answer = tool(instance, api_key, 2, name, {"session": handle, **arguments} if name != "open_session" else arguments)
    assert "result" in answer and answer["result"]["isError"], answer
    assert named in answer["result"]["content"][0]["text"]
    assert session_sks(aws, handle) == [ts.METADATA_SK]


def _call_items(aws: AwsStack, handle: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The session's tool-call records and idempotency markers, as stored."""
    items = aws.client("dynamodb").query(
        TableName=aws.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": ts.session_pk(handle)}},
        ConsistentRead=True,
    )["Items"]
    records = [i for i in items if i["sk"]["S"].startswith(ts.TOOL_RECORD_PREFIX)]
    markers = [i for i in items if i["sk"]["S"].startswith(ts.TOOL_CALL_MARKER_PREFIX)]
    return records, markers


def test_f3_a_committed_call_with_an_idempotency_key_stores_its_result_once_in_its_marker(
    instance: Instance, aws: AwsStack, api_key: str
) -> None:
    """D4: the marker holds the result (a replay reads it); the record holds the arguments and a
    reference to it, never a second copy."""
    handle = open_handle(instance, api_key)
    meta = {**CAPS_META, IDEMPOTENCY_KEY_META: "note-1"}
    params = {"name": "append_note", "arguments": {"session": handle, "text": "hello"}, "_meta": meta}
    assert not final_message(modern_post(instance.url, api_key, 2, "tools/call", params))["result"]["isError"]
    (record,), (marker,) = _call_items(aws, handle)
    assert ts.RESULT in marker and ts.RESULT not in record
    assert record["result_sk"] == marker["sk"] and int(record["result_bytes"]["N"]) > 0


def test_f3_a_committed_call_under_a_fresh_id_stores_its_result_once_on_its_record(
    instance: Instance, aws: AwsStack, api_key: str
) -> None:
    """D4 as amended: a 2026 call without an idempotency key gets a fresh id that no retry can
    carry, so nothing can replay it: no marker is written, and the record holds the result."""
    handle = open_handle(instance, api_key)
    answer = tool(instance, api_key, 2, "append_note", {"session": handle, "text": "hello"})
    assert not answer["result"]["isError"]
    (record,), markers = _call_items(aws, handle)
    assert markers == []
    assert "result_sk" not in record and int(record["result_bytes"]["N"]) > 0
    assert from_attr(record[ts.RESULT])["structuredContent"] == answer["result"]["structuredContent"]


# -- finding 6: handles and session ids have a fixed format, checked before any AWS call -------------
def test_f6_a_malformed_handle_is_not_found_with_zero_aws_calls(instance: Instance, api_key: str) -> None:
    """Given a 10 KB handle (real DynamoDB refuses key values over 2,048 bytes: a 503 there),
    Then the same -31001 as an unknown well-formed handle, and the store made no call."""
    gateway = instance.endpoint.store.gateway
    unknown = tool(instance, api_key, 2, "read_notes", {"session": "A" * 32})
    assert unknown["error"]["code"] == SESSION_NOT_FOUND
    before = gateway.total_calls
    malformed = tool(instance, api_key, 3, "read_notes", {"session": "x" * 10_000})
    assert gateway.total_calls == before
    assert malformed["error"] == unknown["error"]


def test_f6_a_malformed_mcp_session_id_is_404_with_zero_aws_calls(instance: Instance, api_key: str) -> None:
    gateway = instance.endpoint.store.gateway
    before = gateway.total_calls
    for malformed in ("s" * 3000, "short", "A" * 31 + "!"):
        assert call(instance.url, api_key, malformed, 2, "ping").status_code == 404
        deleted = httpx.delete(instance.url, headers=headers(api_key, **{"Mcp-Session-Id": malformed}))
        assert deleted.status_code == 404
    assert gateway.total_calls == before
