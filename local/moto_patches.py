"""What the local platform changes in moto, and the moto internals it reads (moto 5.2.5 only).

moto grows a long-running emulator's memory and per-call cost with everything ever written (a
working day of tool calls ran `make dev` out of memory). Without changing any AWS answer:

1. ``transact_write_items`` deep-copies each table it names (stream records included), once
   per action, for its rollback, and on failure puts the copies in place of the tables. The
   patch snapshots only the items the transaction names and restores them (and truncates the
   streams) in place: same conditions, CancellationReasons, ALL_OLD item and all-or-nothing
   outcome, a cost independent of the table's size, and tables (and the stream shards that
   iterators point at) that stay the same objects.
2. ``BaseModel.__new__`` appends every model instance, deep copies included, to a class-level
   list for moto's dashboard, never cleared: the patch stops the tracking (the dashboard at
   /moto-api then lists no instances; nothing else here reads it).
3. DynamoDB Streams keeps every shard iterator it hands out: the patch keeps the newest
   MAX_SHARD_ITERATORS and answers ExpiredIteratorException, as AWS does, for an older one.
4. Stream records are kept forever: :func:`trim_table_stream` drops consumed ones (the caller
   decides which, see local.health).
5. Routing each request lists moto's package directory (about 50 stat calls, 2-5 ms, under the
   emulator's one-request-at-a-time lock): the listing is taken once (it cannot change).
:func:`apply` refuses to patch any other moto than the one the digests below were taken from.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import threading
from collections import OrderedDict
from datetime import timedelta
from typing import Any

import moto
from moto import backends
from moto.core.common_models import BaseModel
from moto.core.exceptions import ServiceException
from moto.core.model_instances import reset_model_data
from moto.core.utils import utcnow
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.exceptions import MockValidationException
from moto.dynamodb.models import DynamoDBBackend, dynamodb_backends
from moto.dynamodb.models.table import StreamShard, Table
from moto.dynamodbstreams.models import DynamoDBStreamsBackend
from moto.kinesis.models import kinesis_backends

PINNED_VERSION = "5.2.5"
MAX_SHARD_ITERATORS = 1000  # a poller uses one at a time; AWS expires them after 15 minutes
# What the patches rely on, with the start of the sha256 of its source as moto 5.2.5 ships it.
RELIED_ON: dict[str, tuple[Any, str]] = {
    "DynamoDBBackend.transact_write_items": (DynamoDBBackend.transact_write_items, "81db2cb7d94e39c9"),
    "DynamoDBBackend.get_keys_value": (DynamoDBBackend.get_keys_value, "1f948797496ddc2c"),
    "Table.get_item": (Table.get_item, "b08e98fe37b7e583"),
    "Table.delete_item": (Table.delete_item, "1594f7b07616c8cb"),
    "StreamShard": (StreamShard, "9ce150ce1371ef13"),
    "BaseModel.__new__": (BaseModel.__new__, "08cf0ef20e88029a"),
    "DynamoDBStreamsBackend": (DynamoDBStreamsBackend, "a3ee1d3617795f3e"),
    "list_of_moto_modules": (backends.list_of_moto_modules, "4f741a10b06500e8"),
}
_applied = False
_in_transaction = threading.local()


class MotoPatchMismatch(RuntimeError):
    """The installed moto is not the one local/moto_patches.py was written against."""


class ExpiredIterator(ServiceException):
    code = "ExpiredIteratorException"
    message = "The shard iterator has expired (the emulator keeps only the newest ones); take a new one"


def check_moto() -> None:
    """Raises MotoPatchMismatch unless moto and every piece of it the patches rely on are as pinned."""
    if moto.__version__ != PINNED_VERSION:
        raise MotoPatchMismatch(
            f"local/moto_patches.py patches moto {PINNED_VERSION}, but moto {moto.__version__} is installed: "
            f"install moto=={PINNED_VERSION} (requirements-dev.txt), or re-read the patched code and adapt"
        )
    digest = {
        name: hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()[:16] for name, (obj, _) in RELIED_ON.items()
    }
    changed = [name for name, (_, pinned) in RELIED_ON.items() if digest[name] != pinned]
    if changed:
        raise MotoPatchMismatch(f"this moto differs from the code local/moto_patches.py patches: {changed}")


def apply() -> None:
    """Idempotent; the local emulator calls it before it starts serving."""
    global _applied
    if _applied:
        return
    check_moto()
    original = DynamoDBBackend.transact_write_items
    DynamoDBBackend.transact_write_items = _item_level_rollback(original)  # type: ignore[method-assign]
    dynamodb_models.copy = _TablesStayPut()  # type: ignore[assignment]  # see _TablesStayPut
    BaseModel.__new__ = staticmethod(_untracked_new)  # type: ignore[method-assign]
    reset_model_data()  # and forget whatever was tracked before
    init = DynamoDBStreamsBackend.__init__

    def streams_init(self: DynamoDBStreamsBackend, region_name: str, account_id: str) -> None:
        init(self, region_name, account_id)
        self.shard_iterators = _RecentIterators()

    DynamoDBStreamsBackend.__init__ = streams_init  # type: ignore[method-assign]
    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules
    _applied = True


# -- 1. item-level transaction rollback ---------------------------------------------------------
class _TablesStayPut:
    """Stands for the ``copy`` module inside moto.dynamodb.models. During a patched transaction,
    deep-copying a Table (moto's rollback backup, its only deepcopy of a Table there) returns the
    table itself, so moto's "restore the backup" puts back the same object; every other copy is
    the real one."""

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        if isinstance(value, Table) and getattr(_in_transaction, "active", False):
            return value
        return copy.deepcopy(value, memo)


def _item_level_rollback(original: Any) -> Any:
    def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
        snapshot = _Snapshot(self, transact_items)
        if snapshot.lambda_mapped:
            # moto's own Lambda mappings consume (and clear) stream records as they are written;
            # only the whole-table copy restores those: moto's way (the platform uses none).
            return original(self, transact_items)
        _in_transaction.active = True
        try:
            return original(self, transact_items)
        except BaseException:
            snapshot.restore()  # moto re-raises after its own (now no-op) restore
            raise
        finally:
            _in_transaction.active = False

    return functools.wraps(original)(transact_write_items)


class _Snapshot:
    """The items a transaction names, as they are before it, and each stream's length."""

    def __init__(self, backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
        self._items: list[tuple[Table, Any, Any, Any]] = []  # table, hash key, range key, item or None
        self._whole: dict[str, tuple[Table, Any]] = {}  # table name -> (table, deep copy of its items)
        self._streams: dict[str, tuple[StreamShard, int]] = {}
        self.lambda_mapped = False
        for action in transact_items:
            for kind, op in action.items():
                name = op.get("TableName") if isinstance(op, dict) else None
                table = backend.tables.get(name) if isinstance(name, str) else None
                if table is None:
                    continue  # nothing can be written to a table that does not exist
                self.lambda_mapped |= bool(table.lambda_event_source_mappings)
                if table.stream_shard is not None:
                    self._streams.setdefault(table.name, (table.stream_shard, len(table.stream_shard.items)))
                try:
                    hash_key, range_key = backend.get_keys_value(table, op["Item"] if kind == "Put" else op["Key"])
                except (KeyError, TypeError, AttributeError, IndexError, MockValidationException):
                    # A key moto will reject as malformed: keep all of this table's items, once.
                    self._whole.setdefault(table.name, (table, copy.deepcopy(table.items)))
                    continue
                self._items.append((table, hash_key, range_key, copy.deepcopy(table.get_item(hash_key, range_key))))

    def restore(self) -> None:
        for table, items in self._whole.values():
            table.items = items
        for table, hash_key, range_key, item in reversed(self._items):
            if table.name in self._whole:
                continue
            holder = table.items[hash_key] if range_key is not None else table.items
            key = range_key if range_key is not None else hash_key
            if item is None:
                holder.pop(key, None)
            else:
                holder[key] = item
        for shard, length in self._streams.values():
            del shard.items[length:]


# -- 2. no instance registry ----------------------------------------------------------------------
def _untracked_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    """BaseModel.__new__ without ``cls.instances_tracked.append(instance)``."""
    return super(BaseModel, cls).__new__(cls)  # type: ignore[misc]


# -- 3. bounded shard iterators -------------------------------------------------------------------
class _RecentIterators(OrderedDict[str, Any]):
    """DynamoDBStreamsBackend.shard_iterators holding only the newest MAX_SHARD_ITERATORS."""

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        while len(self) > MAX_SHARD_ITERATORS:
            self.popitem(last=False)

    def __missing__(self, key: str) -> Any:
        raise ExpiredIterator()


# -- 4. what the local platform reads and trims (call with the emulator's lock held) ---------------
def table_stream_span(account: str, region: str, table_name: str) -> tuple[str, int, int] | None:
    """(shard id, first sequence number held, next sequence number) of a table's stream."""
    shard = dynamodb_backends[account][region].get_table(table_name).stream_shard
    if shard is None:
        return None
    start = shard.starting_sequence_number
    return shard.id, start, start + len(shard.items)


def trim_table_stream(account: str, region: str, table_name: str, through: int, older_than_s: float) -> int:
    """Drops the stream records with a sequence number up to ``through`` that are older than
    ``older_than_s``; returns how many. moto numbers a shard's records from its
    ``starting_sequence_number`` by position, so it moves up by as many as were dropped: every
    record keeps its number and every iterator at or after the new start stays valid."""
    shard = dynamodb_backends[account][region].get_table(table_name).stream_shard
    if shard is None:
        return 0
    cutoff = utcnow() - timedelta(seconds=older_than_s)
    count = 0
    for record in shard.items:
        change = record.record["dynamodb"]
        if int(change["SequenceNumber"]) > through or change["ApproximateCreationDateTime"] >= cutoff:
            break
        count += 1
    if count:
        del shard.items[:count]
        shard.starting_sequence_number += count
    return count


def kinesis_pending(account: str, region: str, stream_name: str, after: dict[str, str]) -> int:
    """Records of a Kinesis stream after the given per-shard sequence numbers (all, if none)."""
    stream = kinesis_backends[account][region].describe_stream(stream_arn=None, stream_name=stream_name)
    pending = 0
    for shard_id, shard in stream.shards.items():
        checkpoint = int(after.get(shard_id, "0"))
        for sequence in reversed(shard.records):  # newest first: the cost is the lag, not the stream
            if sequence <= checkpoint:
                break
            pending += 1
    return pending
