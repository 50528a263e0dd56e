"""make bench's request-unit estimate (bench_aws_calls.CallCounter) against moto: the units of each
call follow DynamoDB's rules for the sizes of the items it read or wrote, before and after."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.support.aws import client, fake_credentials, moto_server
from tests.support.tables import create_session_table

pytestmark = pytest.mark.integration

BENCH = Path(__file__).resolve().parents[3] / "bench"
TABLE = "sessions"


@pytest.fixture(scope="module")
def endpoint_url() -> Iterator[str]:
    with fake_credentials(), moto_server() as url:
        create_session_table(client("dynamodb", url), TABLE)
        yield url


@pytest.fixture
def counted(endpoint_url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """A counted DynamoDB client and its counter (whose peek reads the items around each write)."""
    monkeypatch.syspath_prepend(str(BENCH))
    bench: ModuleType = importlib.import_module("bench_aws_calls")
    counter = bench.CallCounter(peek=client("dynamodb", endpoint_url))
    return counter.attach(client("dynamodb", endpoint_url)), counter


def key(sk: str) -> dict[str, Any]:
    return {"pk": {"S": "units"}, "sk": {"S": sk}}


def item(sk: str, text_bytes: int) -> dict[str, Any]:
    return {**key(sk), "text": {"S": "x" * text_bytes}}


def units(counter: Any, call: Any) -> tuple[float, float]:
    """(read units, write units) of one call."""
    counter.reset()
    call()
    return counter.usage.read_units, counter.usage.write_units


def test_writes_cost_1_kb_steps_of_the_larger_item_before_or_after(counted: tuple[Any, Any]) -> None:
    dynamodb, counter = counted
    # A 1.5 KB item written: 2 units; grown to 2.5 KB by an update: 3 units
    assert units(counter, lambda: dynamodb.put_item(TableName=TABLE, Item=item("w", 1500))) == (0, 2)
    update = {"UpdateExpression": "SET more = :m", "ExpressionAttributeValues": {":m": {"S": "y" * 1000}}}
    assert units(counter, lambda: dynamodb.update_item(TableName=TABLE, Key=key("w"), **update)) == (0, 3)
    # A write refused by its condition is paid for the item as it stays (2.5 KB: 3 units)
    refused = {"ConditionExpression": "attribute_not_exists(pk)"}

    def put_again() -> None:
        with pytest.raises(ClientError):
            dynamodb.put_item(TableName=TABLE, Item=item("w", 10), **refused)

    assert units(counter, put_again) == (0, 3)
    # Then the time of every call and peek is kept out of the endpoint's own time
    assert counter.excluded_s > 0


def test_a_transaction_pays_twice_for_each_item_it_writes_or_checks(counted: tuple[Any, Any]) -> None:
    dynamodb, counter = counted
    dynamodb.put_item(TableName=TABLE, Item=item("checked", 2500))
    actions = [
        {"Put": {"TableName": TABLE, "Item": item("new", 100)}},
        {"ConditionCheck": {"TableName": TABLE, "Key": key("checked"), "ConditionExpression": "attribute_exists(pk)"}},
    ]
    # 2 x 1 unit for the new 100-byte item, 2 x 3 units for the 2.5 KB one it checks
    assert units(counter, lambda: dynamodb.transact_write_items(TransactItems=actions)) == (0, 8)


def test_reads_cost_4_kb_steps_half_when_eventually_consistent_and_a_missing_key_the_minimum(
    counted: tuple[Any, Any],
) -> None:
    dynamodb, counter = counted
    dynamodb.put_item(TableName=TABLE, Item=item("r", 5000))
    # A 5 KB item: 2 units read consistently, 1 eventually
    assert units(counter, lambda: dynamodb.get_item(TableName=TABLE, Key=key("r"), ConsistentRead=True)) == (2, 0)
    assert units(counter, lambda: dynamodb.get_item(TableName=TABLE, Key=key("r"))) == (1, 0)
    # A consistent BatchGet of it and of a key not found: 2 + 1
    batch = {TABLE: {"Keys": [key("r"), key("absent")], "ConsistentRead": True}}
    assert units(counter, lambda: dynamodb.batch_get_item(RequestItems=batch)) == (3, 0)
