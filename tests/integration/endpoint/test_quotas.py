"""G2 end to end: tool calls become events, ingest counts them into the quota totals (exactly
once, whatever is redelivered), and the endpoint refuses a principal's next tool call once its
day's quota is used up, on any instance."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta

import pytest

from mcp_platform.bootstrap.ingest import build_ingestor
from mcp_platform.protocol.jsonrpc import QUOTA_EXCEEDED
from tests.support.endpoint import AwsStack, Instance, alice_and_bob, endpoint_instance, fresh_stack
from tests.support.kinesis import read_whole_stream
from tests.support.mcp_http import CAPS_META, final_message, modern_call

pytestmark = pytest.mark.integration

aws = pytest.fixture(fresh_stack, name="aws")
keys = pytest.fixture(alice_and_bob, name="keys")
QUOTAS = '{"principal": "3/day"}'
ECHO = {"name": "echo", "arguments": {"text": "hi"}, "_meta": CAPS_META}


@pytest.fixture
def two(aws: AwsStack) -> Iterator[list[Instance]]:
    with ExitStack() as stack:
        yield [stack.enter_context(endpoint_instance(aws, MCP_QUOTAS=QUOTAS)) for _ in range(2)]


def ingest_everything(aws: AwsStack) -> int:
    """What the ingest function does with the stream's records (quotas on: it keeps the totals)."""
    ingestor = build_ingestor(aws.settings(MCP_QUOTAS=QUOTAS), dynamodb=aws.client("dynamodb"))
    records = read_whole_stream(aws.client("kinesis"), aws.stream)
    for record in records:
        ingestor.ingest_record(base64.b64encode(record["Data"]).decode())
    return len(records)


def test_a_used_up_day_quota_refuses_the_next_tool_call_on_every_instance(
    aws: AwsStack, two: list[Instance], keys: dict[str, str]
) -> None:
    """Given principal: 3/day, when alice makes three tool calls and ingest counts their events
    (twice: a redelivery counts nothing), then her fourth is refused on both instances with
    429, -31009 naming the quota and its reset at 00:00 UTC; tools/list still answers, and
    bob's calls run."""
    for n in range(3):
        answer = modern_call(two[n % 2].url, keys["alice"], n, "tools/call", ECHO)
        assert final_message(answer)["result"]["content"][0]["text"] == "hi"
    assert ingest_everything(aws) == 3
    assert ingest_everything(aws) == 3  # redelivered: the dedupe markers keep the totals exact
    midnight = (datetime.now(UTC) + timedelta(days=1)).date().isoformat() + "T00:00:00Z"
    for instance in two:
        refused = modern_call(instance.url, keys["alice"], 10, "tools/call", ECHO)
        assert refused.status_code == 429
        error = refused.json()["error"]
        assert error["code"] == QUOTA_EXCEEDED
        assert error["data"]["quota"] == "principal:day" and error["data"]["allowed"] == "3/day"
        assert error["data"]["resetsAt"] == midnight
        assert int(refused.headers["retry-after"]) == error["data"]["retryAfterSeconds"] > 0
        assert refused.json()["id"] == 10
    listed = modern_call(two[0].url, keys["alice"], 11, "tools/list", {"_meta": CAPS_META})
    assert "tools" in final_message(listed)["result"]
    assert "result" in final_message(modern_call(two[1].url, keys["bob"], 12, "tools/call", ECHO))


def test_without_quotas_ingest_keeps_no_totals(aws: AwsStack, keys: dict[str, str]) -> None:
    """Given no quotas, when a call is ingested, then no quota totals item is written (the
    write costs each event: it is made only where quotas are on)."""
    from mcp_platform.adapters.dynamodb import table_schema as ts

    with endpoint_instance(aws) as instance:
        assert "result" in final_message(modern_call(instance.url, keys["alice"], 1, "tools/call", ECHO))
    ingestor = build_ingestor(aws.settings(), dynamodb=aws.client("dynamodb"))
    for record in read_whole_stream(aws.client("kinesis"), aws.stream):
        ingestor.ingest_record(base64.b64encode(record["Data"]).decode())
    items = aws.client("dynamodb").query(
        TableName=aws.table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": ts.usage_pk("alice")}},
    )["Items"]
    assert items and not [item for item in items if item["sk"]["S"].startswith(ts.USAGE_TOTALS_PREFIX)]


def test_the_operator_sees_the_usage_and_a_reset_lets_the_principal_call_again(
    aws: AwsStack, two: list[Instance], keys: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Given alice over her day quota, when the operator runs `usage show`, then it lists her
    calls per day and tool and the quota totals; after `usage reset --day --yes` her next call
    runs; without --yes nothing is reset (exit 2)."""
    import json

    from mcp_platform.ops.__main__ import run

    for n in range(3):
        modern_call(two[n % 2].url, keys["alice"], n, "tools/call", ECHO)
    ingest_everything(aws)
    assert modern_call(two[0].url, keys["alice"], 5, "tools/call", ECHO).status_code == 429
    env = {"SESSION_TABLE_NAME": aws.table, "AWS_REGION": "us-east-1", "MCP_QUOTAS": QUOTAS}
    clients = {"dynamodb": aws.client("dynamodb")}
    capsys.readouterr()
    assert run(["usage", "show", "alice"], env, clients) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["tool"], line["calls"]) for line in lines[:-1]] == [("echo", 3)]
    totals = lines[-1]["quota_totals"]
    assert (totals["month_calls"], totals["today_calls"], totals["quotas"]) == (3, 3, {"principal": "3/day"})
    assert run(["usage", "reset", "alice", "--day"], env, clients) == 2
    assert modern_call(two[1].url, keys["alice"], 6, "tools/call", ECHO).status_code == 429
    assert run(["usage", "reset", "alice", "--day", "--yes"], env, clients) == 0
    assert "result" in final_message(modern_call(two[1].url, keys["alice"], 7, "tools/call", ECHO))
