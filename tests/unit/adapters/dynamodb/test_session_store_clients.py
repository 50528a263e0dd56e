"""X3/X4/X5: client selection, what goes through DAX, which reads are consistent; the
counting gateway; both error shapes."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from botocore.exceptions import ClientError

from mcp_platform.adapters.dynamodb.aws_errors import cancellation_reasons, error_code
from mcp_platform.adapters.dynamodb.sessions import (
    DynamoGateway,
    ManualClock,
    SessionStore,
    ToolCall,
    build_dynamo_clients,
)
from mcp_platform.application.sessions.changes import SessionChanges
from mcp_platform.config import ConfigError, Settings
from tests.support.tables import create_session_table


def test_x5_without_dax_endpoint_the_plain_client_serves_everything(ddb: Any) -> None:
    """X5: Given no DAX endpoint, When clients are built, Then data and control are the same
    plain DynamoDB client and amazondax is not needed."""
    clients = build_dynamo_clients(Settings(session_table="t"), dynamodb=ddb)
    assert clients.data is ddb and clients.control is ddb and clients.dax is False


def test_x3_dax_endpoint_selects_dax_client_lazily(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """X3: Given DAX_ENDPOINT, When clients are built, Then amazondax.AmazonDaxClient is imported
    at that moment and built with the endpoint; the plain client is kept for control ops."""
    built: list[dict[str, Any]] = []

    class FakeDax:
        def __init__(self, **kwargs: Any) -> None:
            built.append(kwargs)

    fake_module = types.ModuleType("amazondax")
    fake_module.AmazonDaxClient = FakeDax  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "amazondax", fake_module)
    settings = Settings.from_mapping({"SESSION_TABLE_NAME": "t", "DAX_ENDPOINT": "daxs://c.dax.example:9111"})
    clients = build_dynamo_clients(settings, dynamodb=ddb)
    assert isinstance(clients.data, FakeDax) and clients.control is ddb and clients.dax is True
    assert built == [{"region_name": "us-east-1", "endpoint_url": "daxs://c.dax.example:9111"}]


def test_x3_item_operations_go_through_dax_and_table_operations_through_plain(
    ddb: Any, recording: Any, clock: ManualClock
) -> None:
    """X3: Given a store built with a DAX stand-in, When every store operation runs (including
    the transaction), Then all of them hit the DAX client; table operations use the plain one."""
    create_session_table(ddb, "dax-table")
    store = SessionStore.from_settings(
        Settings.from_mapping({"SESSION_TABLE_NAME": "dax-table", "DAX_ENDPOINT": "daxs://c:9111"}),
        dynamodb=ddb,
        dax=recording,
        clock=clock,
    )
    session = store.create_session("alice")
    store.append_context(session.id, ["m"])
    held, _ = store.load_for_tool_call(session.id, "c1", owner="alice")
    store.commit(held, ToolCall("c1", "echo", {}, "r"), SessionChanges())
    store.list_tool_calls(session.id, consistent=False)
    store.expiring_within(60)
    store.extend_expiry(session.id)
    store.end_session(session.id)
    assert set(recording.ops()) == {
        "put_item",
        "update_item",
        "batch_get_item",
        "transact_write_items",
        "get_item",
        "query",
    }
    assert store.gateway.control("describe_table", TableName="dax-table")["Table"]["TableName"] == "dax-table"
    assert "describe_table" not in recording.ops()


def test_x4_each_read_states_its_consistency(recorded_store: SessionStore, recording: Any) -> None:
    """X4: Given a session, When read by each operation, Then ConsistentRead is exactly as the
    call site says: get(consistent=...) as asked, load_for_tool_call and the D2 read True."""
    session = recorded_store.create_session("alice")
    recording.calls.clear()
    recorded_store.get_session(session.id, consistent=False)
    recorded_store.get_session(session.id, consistent=True)
    recorded_store.load_for_tool_call(session.id, "c", owner="alice")
    recorded_store.update_metadata(session.id, lambda s: s)
    flags = [
        params.get(
            "ConsistentRead", params.get("RequestItems", {}).get(recorded_store.table_name, {}).get("ConsistentRead")
        )
        for _, params in recording.calls
    ]
    assert flags == [False, True, True, True, None]


def test_x4_stale_cached_expired_answer_is_confirmed_consistently(
    recorded_store: SessionStore, recording: Any, clock: ManualClock
) -> None:
    """X4/D6: Given a cache that still holds the pre-extension item (looks expired), When the
    session is read eventually-consistently, Then one consistent read confirms it is alive."""
    session = recorded_store.create_session("alice")
    clock.advance(300)
    recorded_store.extend_expiry(session.id)
    clock.advance(400)  # past the original ttl, within the extended one
    stale = {
        "Item": {
            "pk": {"S": f"session#{session.id}"},
            "sk": {"S": "metadata"},
            "owner": {"S": "alice"},
            "status": {"S": "active"},
            "version": {"N": "1"},
            "ttl": {"N": str(session.ttl)},
        }
    }
    real_get = recording.inner.get_item
    recording.inner = types.SimpleNamespace(
        get_item=lambda **p: real_get(**p) if p["ConsistentRead"] else stale,
    )
    recording.calls.clear()
    assert recorded_store.get_session(session.id, consistent=False).ttl == session.ttl + 300
    assert [p["ConsistentRead"] for _, p in recording.calls] == [False, True]


def test_gateway_counts_every_call_per_operation(ddb: Any, table: str) -> None:
    """Budget: Given the gateway, When calls are made (data and control), Then each is counted."""
    gateway = DynamoGateway(ddb)
    gateway.call("get_item", TableName=table, Key={"pk": {"S": "a"}, "sk": {"S": "b"}})
    gateway.control("describe_table", TableName=table)
    assert gateway.calls == {"get_item": 1, "describe_table": 1} and gateway.total_calls == 2


def test_d10_reasons_read_from_boto3_dax_and_message_shapes() -> None:
    """D10: Given the three shapes a cancellation can arrive in, When parsed, Then the same
    normalised reasons come out."""
    boto = ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": "x"},
            "CancellationReasons": [{"Code": "None"}, {"Code": "ConditionalCheckFailed"}],
        },
        "Tx",
    )
    dax = ClientError({"Error": {"Code": "TransactionCanceledException", "Message": "x"}}, "Tx")
    dax.cancellation_reasons = [{"Code": "None"}, {"Code": "ConditionalCheckFailedException"}]  # type: ignore[attr-defined]
    text = ClientError(
        {
            "Error": {
                "Code": "TransactionCanceledException",
                "Message": "Transaction cancelled ... reasons [None, ConditionalCheckFailed]",
            }
        },
        "Tx",
    )
    for exc in (boto, dax, text):
        assert error_code(exc) == "TransactionCanceledException"
        assert [r.code for r in cancellation_reasons(exc)] == ["None", "ConditionalCheckFailed"]


def test_the_stored_formats_follow_the_release_to_stay_compatible_with(ddb: Any, table: str) -> None:
    """Given COMPATIBLE_WITH (what the stack's ``compatible_with`` sets), When the store is built
    from settings, Then it writes the context layout that release reads (its metadata list for
    0.1; context items otherwise) and a committed call's event whole on its record for any release
    up to 0.3 (only what the record lacks when unset); anything else is refused at start, naming
    the variable."""
    built = {
        value: SessionStore.from_settings(
            Settings.from_mapping({"SESSION_TABLE_NAME": table, **({"COMPATIBLE_WITH": value} if value else {})}),
            dynamodb=ddb,
        )._table
        for value in ("", "0.1", "0.2", "0.3")
    }
    assert {value: (t.context_layout, t.event_as_text) for value, t in built.items()} == {
        "": ("items", False),
        "0.1": ("list", True),
        "0.2": ("items", True),
        "0.3": ("items", True),
    }
    with pytest.raises(ConfigError, match="COMPATIBLE_WITH"):
        Settings.from_mapping({"SESSION_TABLE_NAME": table, "COMPATIBLE_WITH": "0.0"})
