"""D2/D3 under real concurrency: ThreadedMotoServer, one boto3 client per thread.

The locked workload must lose nothing; the unlocked read-modify-write control, under the
same load, must lose updates, which shows the test can detect a race at all.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.config import Config

from mcp_platform.adapters.dynamodb.sessions import SessionStore, VersionConflict
from tests.support.tables import create_session_table

pytestmark = pytest.mark.integration

WORKERS = 50  # 25 appenders + 25 version-checked updaters
CONTROL_WINDOW_SECONDS = 0.01  # widens the control's read->write gap so its loss is certain


def client(url: str) -> Any:
    return boto3.client(
        "dynamodb", region_name="us-east-1", endpoint_url=url, config=Config(retries={"max_attempts": 1})
    )


def run_together(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Start every job at once (barrier); return results in job order; re-raise failures."""
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)
    errors: list[BaseException] = []

    def worker(index: int, job: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            results[index] = job()
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i, job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    if errors:
        raise errors[0]
    return results


@pytest.fixture
def table(moto_url: str) -> str:
    name = f"sessions-{uuid.uuid4().hex[:8]}"
    create_session_table(client(moto_url), name)
    return name


def test_d2_d3_concurrent_appends_and_versioned_updates_lose_nothing(moto_url: str, table: str) -> None:
    """D2/D3: Given one session, When 25 threads append (list_append) and 25 threads increment
    a counter with version-checked updates (re-trying VersionConflict), all at once and each
    with its own client, Then every message is there exactly once, the counter is 25, and the
    50 operations got 50 distinct versions 2..51 (strictly increasing, none reused)."""
    session = SessionStore(table, client=client(moto_url)).create_session("alice")

    def appender(i: int) -> Callable[[], int]:
        store = SessionStore(table, client=client(moto_url))
        return lambda: store.append_context(session.id, [f"m{i}"])

    def updater() -> Callable[[], int]:
        store = SessionStore(table, client=client(moto_url))

        def bump(s: Any) -> Any:
            return replace(s, attributes={"counter": s.attributes.get("counter", 0) + 1})

        def job() -> int:
            for _ in range(100):
                try:
                    return store.update_metadata(session.id, bump).version
                except VersionConflict:
                    continue
            raise AssertionError("update never landed")

        return job

    jobs = [appender(i) for i in range(WORKERS // 2)] + [updater() for _ in range(WORKERS // 2)]
    versions = run_together(jobs)

    final = SessionStore(table, client=client(moto_url)).get_session(session.id, consistent=True)
    assert sorted(final.context) == sorted(f"m{i}" for i in range(WORKERS // 2))
    assert final.attributes["counter"] == WORKERS // 2
    assert sorted(versions) == list(range(2, WORKERS + 2)) and final.version == WORKERS + 1


def test_control_unlocked_read_modify_write_loses_updates(moto_url: str, table: str) -> None:
    """Control for D2/D3: Given the same session and load, When 50 threads each read the item,
    add one message and one to the counter, and write it back WITHOUT a version condition,
    Then updates are lost (fewer than 50 messages / a counter below 50). A 10 ms pause
    between read and write widens the race window so the loss does not depend on luck."""
    session = SessionStore(table, client=client(moto_url)).create_session("alice")
    key = {"pk": {"S": f"session#{session.id}"}, "sk": {"S": "metadata"}}

    def unlocked(i: int) -> Callable[[], None]:
        ddb = client(moto_url)

        def job() -> None:
            item = ddb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
            counter = int(item.get("counter", {"N": "0"})["N"])
            context = item.get("context", {"L": []})["L"]  # the control keeps a list in the item itself
            time.sleep(CONTROL_WINDOW_SECONDS)
            ddb.update_item(
                TableName=table,
                Key=key,
                UpdateExpression="SET #c = :c, #ctx = :ctx",
                ExpressionAttributeNames={"#c": "counter", "#ctx": "context"},
                ExpressionAttributeValues={":c": {"N": str(counter + 1)}, ":ctx": {"L": [*context, {"S": f"m{i}"}]}},
            )

        return job

    run_together([unlocked(i) for i in range(WORKERS)])
    item = client(moto_url).get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
    assert int(item["counter"]["N"]) < WORKERS
    assert len(item["context"]["L"]) < WORKERS
