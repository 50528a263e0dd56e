"""Zero-latency fake AWS clients and an in-process ASGI driver for the benchmarks.

The fakes keep items in a dict and ignore conditions: they measure our CPU, not AWS.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from typing import Any


def _key(item_or_key: dict[str, Any]) -> tuple[str, str]:
    return item_or_key["pk"]["S"], item_or_key["sk"]["S"]


class FakeDynamo:
    def __init__(self) -> None:
        self.items: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: Counter[str] = Counter()

    def put_item(self, TableName: str, Item: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.calls["put_item"] += 1
        self.items[_key(Item)] = Item
        return {}

    def get_item(self, TableName: str, Key: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.calls["get_item"] += 1
        item = self.items.get(_key(Key))
        return {"Item": item} if item else {}

    def batch_get_item(self, RequestItems: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.calls["batch_get_item"] += 1
        found = {
            table: [self.items[_key(k)] for k in spec["Keys"] if _key(k) in self.items]
            for table, spec in RequestItems.items()
        }
        return {"Responses": found, "UnprocessedKeys": {}}

    def transact_write_items(self, TransactItems: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        self.calls["transact_write_items"] += 1
        for action in TransactItems:
            if "Put" in action:
                self.items[_key(action["Put"]["Item"])] = action["Put"]["Item"]
        return {}

    def update_item(self, **_: Any) -> dict[str, Any]:
        self.calls["update_item"] += 1
        return {}


class FakeKinesis:
    def __init__(self) -> None:
        self.calls = 0

    def put_records(self, Records: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        self.calls += 1
        return {"FailedRecordCount": 0, "Records": [{"SequenceNumber": "1", "ShardId": "s"}] * len(Records)}


class FakeSqs:
    def send_message_batch(self, Entries: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}


async def asgi_post(
    app: Any,
    path: str,
    headers: dict[str, str],
    body: dict[str, Any],
    *,
    answered: Callable[[], None] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One POST through an ASGI app, no network: (status, headers, body). ``answered`` is called
    the moment a client would hold the whole answer: its Content-Length received, else the last
    body message (what the app does after that, before it returns, is not the client's wait)."""
    payload = json.dumps(body).encode()
    raw_headers = [
        (k.encode(), v.encode())
        for k, v in {**headers, "content-type": "application/json", "host": "127.0.0.1:8000"}.items()
    ]
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": raw_headers,
        "client": ("127.0.0.1", 1),
        "query_string": b"",
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "root_path": "",
        "raw_path": path.encode(),
        "asgi": {"version": "3.0"},
    }
    sent = False
    response: dict[str, Any] = {"status": 0, "headers": {}, "body": b"", "answered": False}
    finished = asyncio.Event()

    async def receive() -> dict[str, Any]:
        # As a server sees a client that stays connected: the body, then nothing until the
        # response has ended (a disconnect only after it; a streaming server watches for it).
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": payload, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            response["status"] = message["status"]
            response["headers"] = {k.decode(): v.decode() for k, v in message.get("headers", [])}
        elif message["type"] == "http.response.body":
            response["body"] += message.get("body", b"")
            length = response["headers"].get("content-length")
            whole = not message.get("more_body", False) or (length is not None and len(response["body"]) >= int(length))
            if whole and answered is not None and not response["answered"]:
                response["answered"] = True
                answered()
            if not message.get("more_body", False):
                finished.set()

    await app(scope, receive, send)
    finished.set()
    return response["status"], response["headers"], response["body"]
