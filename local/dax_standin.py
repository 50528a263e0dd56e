"""A DAX stand-in for the local platform and the tests: a write-through item cache in front of a
DynamoDB client (no DAX emulator exists anywhere).

What it models of a DAX cluster's item cache, and nothing more:

- An eventually consistent ``GetItem`` / ``BatchGetItem`` is served from the cache while the entry
  is younger than the item TTL (X2, 5 min by default); otherwise it reads the table and caches
  what it found, a missing item included (DAX caches misses too: a negative entry).
- A consistent read passes through to the table and leaves the cache as it was.
- A write through the stand-in (``PutItem``, ``UpdateItem``, ``DeleteItem``,
  ``TransactWriteItems``) goes to the table, then drops the items it touched from the cache, so
  the next read through any client sharing the stand-in sees the write (write-through).
- A write that does not go through it (another function's client, the console) leaves the cache
  as it was: reads keep returning the old item until its entry expires. That is the staleness
  X6 bounds and tests.

Queries and scans pass through (DAX's query cache is not modelled). ``hits`` and ``misses`` count
what the item cache served, for the tests and the AWS-calls benchmark.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from local.bootstrap import DEFAULT_ITEM_TTL_S
from mcp_platform.adapters.dynamodb import table_schema as ts

WRITE_OPERATIONS = ("put_item", "update_item", "delete_item")


class ItemClient(Protocol):
    """The DynamoDB operations the stand-in calls on what it wraps: a boto3 DynamoDB client, or
    the emulator's table in process (:class:`local.dax_cluster.WireTable`). Requests pass through
    as they came, so each operation takes any arguments (``*args: Any, **kwargs: Any``, as
    ``Callable[..., T]``) and answers a response mapping."""

    def get_item(self, *args: Any, **kwargs: Any) -> Mapping[str, Any]: ...
    def batch_get_item(self, *args: Any, **kwargs: Any) -> Mapping[str, Any]: ...
    def put_item(self, *args: Any, **kwargs: Any) -> Mapping[str, Any]: ...
    def update_item(self, *args: Any, **kwargs: Any) -> Mapping[str, Any]: ...
    def delete_item(self, *args: Any, **kwargs: Any) -> Mapping[str, Any]: ...
    def batch_write_item(self, *args: Any, **kwargs: Any) -> Mapping[str, Any]: ...
    def transact_write_items(self, *args: Any, **kwargs: Any) -> Mapping[str, Any]: ...


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    by_operation: dict[str, int] = field(default_factory=dict)

    def served(self, operation: str, hit: bool) -> None:
        if hit:
            self.hits += 1
            self.by_operation[operation] = self.by_operation.get(operation, 0) + 1
        else:
            self.misses += 1

    @property
    def hit_ratio(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


class ItemCacheStandIn:
    """One cluster's item cache: share one instance between every endpoint and worker that
    would talk to the same DAX cluster."""

    def __init__(
        self, client: ItemClient, *, item_ttl_s: float = DEFAULT_ITEM_TTL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._client = client
        self._ttl = item_ttl_s
        self._clock = clock
        self._entries: dict[tuple[str, str], tuple[float, dict[str, Any] | None]] = {}
        self._lock = threading.Lock()
        self.stats = CacheStats()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)  # query, scan, meta, exceptions...: straight through

    # -- reads --------------------------------------------------------------------------------
    def get_item(self, **request: Any) -> dict[str, Any]:
        if request.get("ConsistentRead"):
            return dict(self._client.get_item(**request))
        key = _cache_key(request["TableName"], request["Key"])
        found, hit = self._lookup(key)
        self.stats.served("GetItem", hit)
        if not hit:
            found = self._client.get_item(**request).get("Item")
            self._store(key, found)
        return {"Item": found} if found is not None else {}

    def batch_get_item(self, *, RequestItems: Mapping[str, Any], **rest: Any) -> dict[str, Any]:
        responses: dict[str, list[dict[str, Any]]] = {}
        to_read: dict[str, Any] = {}
        for table, spec in RequestItems.items():
            if spec.get("ConsistentRead"):
                to_read[table] = spec
                continue
            missing = []
            for key in spec["Keys"]:
                found, hit = self._lookup(_cache_key(table, key))
                self.stats.served("BatchGetItem", hit)
                if not hit:
                    missing.append(key)
                elif found is not None:
                    responses.setdefault(table, []).append(found)
            if missing:
                to_read[table] = {**spec, "Keys": missing}
        unprocessed: dict[str, Any] = {}
        if to_read:
            answer = self._client.batch_get_item(RequestItems=to_read, **rest)
            unprocessed = answer.get("UnprocessedKeys") or {}
            for table, items in answer.get("Responses", {}).items():
                responses.setdefault(table, []).extend(items)
                if not to_read[table].get("ConsistentRead"):
                    self._store_read(table, to_read[table]["Keys"], items, unprocessed.get(table))
        return {"Responses": responses, "UnprocessedKeys": unprocessed}

    # -- writes (write-through) -----------------------------------------------------------------
    def put_item(self, **request: Any) -> dict[str, Any]:
        return self._write("put_item", request, [(request["TableName"], request["Item"])])

    def update_item(self, **request: Any) -> dict[str, Any]:
        return self._write("update_item", request, [(request["TableName"], request["Key"])])

    def delete_item(self, **request: Any) -> dict[str, Any]:
        return self._write("delete_item", request, [(request["TableName"], request["Key"])])

    def batch_write_item(self, **request: Any) -> dict[str, Any]:
        touched = []
        for table, writes in request["RequestItems"].items():
            for write in writes:
                (kind, body), *_ = write.items()
                touched.append((table, body["Item"] if kind == "PutRequest" else body["Key"]))
        return self._write("batch_write_item", request, touched)

    def transact_write_items(self, **request: Any) -> dict[str, Any]:
        touched = []
        for action in request["TransactItems"]:
            (kind, body), *_ = action.items()
            touched.append((body["TableName"], body["Item"] if kind == "Put" else body["Key"]))
        return self._write("transact_write_items", request, touched)

    def _write(self, operation: str, request: dict[str, Any], touched: Iterable[tuple[str, Any]]) -> dict[str, Any]:
        keys = [_cache_key(table, item) for table, item in touched]
        try:
            return dict(getattr(self._client, operation)(**request))
        finally:
            # A failed conditional write may still have been applied by a retry: forget either way.
            with self._lock:
                for key in keys:
                    self._entries.pop(key, None)

    # -- the cache ------------------------------------------------------------------------------
    def _lookup(self, key: tuple[str, str]) -> tuple[dict[str, Any] | None, bool]:
        with self._lock:
            entry = self._entries.get(key)
        if entry is None or self._clock() - entry[0] >= self._ttl:
            return None, False
        return entry[1], True

    def _store(self, key: tuple[str, str], item: dict[str, Any] | None) -> None:
        with self._lock:
            self._entries[key] = (self._clock(), item)

    def _store_read(
        self, table: str, keys: list[dict[str, Any]], items: list[dict[str, Any]], unprocessed: Any
    ) -> None:
        found = {_key_of(table, keys[0], item): item for item in items} if keys else {}
        skipped = {_cache_key(table, key) for key in (unprocessed or {}).get("Keys", [])}
        for key in keys:
            cache_key = _cache_key(table, key)
            if cache_key not in skipped:
                self._store(cache_key, found.get(cache_key))


def _cache_key(table: str, key_or_item: Mapping[str, Any]) -> tuple[str, str]:
    """The item's primary key (pk, sk), whichever attributes the mapping also holds."""
    return table, json.dumps(
        {name: key_or_item[name] for name in (ts.PK, ts.SK) if name in key_or_item}, sort_keys=True
    )


def _key_of(table: str, example_key: Mapping[str, Any], item: Mapping[str, Any]) -> tuple[str, str]:
    return _cache_key(table, {name: item[name] for name in example_key})
