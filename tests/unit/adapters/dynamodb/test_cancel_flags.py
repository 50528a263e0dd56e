"""Cancel flags in the session table: written by the instance that got notifications/cancelled,
read (consistently) by the instance running the call."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.cancellation import FLAG_TTL_SECONDS, CancelFlags
from mcp_platform.adapters.dynamodb.sessions import DynamoGateway, ManualClock
from mcp_platform.application.cancellation import CancelCheckFailed


def flags_on(ddb: Any, table: str, clock: ManualClock) -> CancelFlags:
    return CancelFlags(table, DynamoGateway(ddb), clock=clock)


def test_flag_is_seen_by_the_owner_for_that_request_only(ddb: Any, table: str, clock: ManualClock) -> None:
    """Given alice's cancellation of request 7 in session s1, then a read for (s1, 7, alice) finds
    it, and reads for another owner, another session or the request id "7" (a string) do not."""
    flags = flags_on(ddb, table, clock)
    flags.request("s1", 7, owner="alice")
    assert flags.is_requested("s1", 7, owner="alice")
    assert not flags.is_requested("s1", 7, owner="bob")
    assert not flags.is_requested("s2", 7, owner="alice")
    assert not flags.is_requested("s1", "7", owner="alice")


def test_flag_item_is_short_lived_and_keyed_under_the_session(ddb: Any, table: str, clock: ManualClock) -> None:
    """Given a cancellation, then its item sits under the session's pk with a cancel# sort key,
    a ttl a few minutes ahead in epoch seconds (D5), and no status (so never in the D8 GSI)."""
    flags_on(ddb, table, clock).request("s1", "req-1", owner="alice")
    key = {ts.PK: {"S": ts.session_pk("s1")}, ts.SK: {"S": ts.cancel_flag_sk("req-1")}}
    item = ddb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
    assert item[ts.SK]["S"].startswith(ts.CANCEL_FLAG_PREFIX)
    assert int(item[ts.TTL]["N"]) == int(clock.now()) + FLAG_TTL_SECONDS
    assert ts.STATUS not in item and item[ts.OWNER]["S"] == "alice"


def test_expired_flag_is_no_flag_even_before_dynamodb_deletes_it(ddb: Any, table: str, clock: ManualClock) -> None:
    """D6: once its ttl has passed the flag cancels nothing, whether or not the item is gone."""
    flags = flags_on(ddb, table, clock)
    flags.request("s1", 7, owner="alice")
    clock.advance(FLAG_TTL_SECONDS)
    assert not flags.is_requested("s1", 7, owner="alice")


def test_unreadable_flag_raises_cancel_check_failed(ddb: Any, clock: ManualClock) -> None:
    """Given a table that cannot be read, then the check raises CancelCheckFailed (the caller
    tries again next tick) rather than a raw botocore error."""
    with pytest.raises(CancelCheckFailed):
        flags_on(ddb, "no-such-table", clock).is_requested("s1", 7, owner="alice")
