"""AWS round trips on each operation's critical path, counted (deterministic), not estimated;
and what a million of the main operations cost (bench/cost.py).

Our endpoint runs in-process on real boto3 clients against a local moto server; a botocore
``before-call`` hook on every client counts each API call (service.Operation). Each operation
runs once to warm the caches (API-key verification, the request-state key secret), then is
counted on its second run: the warm figure, what a warm Lambda environment pays. The peer (the
official SDK) makes no AWS call at all: its 2025 sessions live in one process's memory (so a
second instance cannot serve them) and it emits no events; the ``peer`` column shows that 0.

For the priced operations the counted run also records what the calls consume (DynamoDB request
units from the sizes of the items read and written, the Kinesis records' bytes, SQS requests),
the bytes of the metric lines, and each invocation's own time: its time in-process minus the time
its calls spent on the wire to moto. That time is the median over ``COST_RUNS`` runs. Each event
the operation puts on the stream is then ingested, counted the same way.

Governance is off for those (no rule: no call). Some of them run again under rate limits and
quotas, each on an endpoint and an ingest configured with its rules (a limits table beside the
session table), compared with the same operation without rules: the requirement's budget is at
most one extra write per limited call, and one read for a quota; the ``governance budget`` rows
and the table under the cost table say what each rule adds and whether it fits.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import io
import itertools
import json
import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import cost
import idle_cost
from common import (
    BENCH_KEY,
    BOTH,
    HANDSHAKE,
    INITIALIZE,
    INITIALIZED,
    MODERN,
    modern_call,
    modern_request,
    row,
    tool_call,
)
from fakes import asgi_post

COST_RUNS = int(os.environ.get("BENCH_COST_RUNS", "9"))
GOVERNED_ROOM = 1_000_000  # what each rule of a governed operation allows per period
SQS_BILLING_BYTES = 64 * 1024

ELICITING = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
WITH_TASKS = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
}


class CallCounter:
    """Counts every API call by operation; a DynamoDB read is named by what may serve it:
    ``[cache]`` an eventually consistent read the DAX item cache may answer (X6), ``[consistent]``
    one that always reaches the table (X4).

    With ``peek`` (an uncounted DynamoDB client on the same tables) it also adds up what the
    calls consume (:class:`cost.Usage`): a write's units need the item's size before and after,
    which ``peek`` reads around the call. ``excluded_s`` sums the time that is not the
    endpoint's: each call on the wire to moto and back, and the peeks."""

    def __init__(self, peek: Any = None) -> None:
        self.calls: Counter[str] = Counter()
        self.usage = cost.Usage()
        self.records: list[bytes] = []  # the Kinesis records put, for the ingest to read
        self.excluded_s = 0.0
        self._peek = peek
        self._keys: dict[str, list[str]] = {}
        self._sent: dict[int, float] = {}

    def reset(self) -> None:
        self.calls.clear()
        self.usage = cost.Usage()
        self.records = []

    def attach(self, client: Any) -> Any:
        events = client.meta.events
        events.register("before-parameter-build", self._count)
        events.register("before-send", self._on_wire)
        events.register("before-parse", self._off_wire)
        if self._peek is not None:
            events.register("before-parameter-build.dynamodb", self._before_write)
            events.register("after-call.dynamodb", self._dynamodb_units)
            events.register("after-call-error.dynamodb", self._dynamodb_units)
        return client

    def _count(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        service = model.service_model.service_name
        name = f"{service}.{model.name}"
        if model.name == "GetItem":
            name += "[consistent]" if params.get("ConsistentRead") else "[cache]"
        elif model.name == "BatchGetItem":
            consistent = any(spec.get("ConsistentRead") for spec in params.get("RequestItems", {}).values())
            name += "[consistent]" if consistent else "[cache]"
        self.calls[name] += 1
        if name == "kinesis.PutRecords":
            self.usage.kinesis_records += [len(r["Data"]) + len(r["PartitionKey"].encode()) for r in params["Records"]]
            self.records += [bytes(r["Data"]) for r in params["Records"]]
        elif service == "sqs":
            bodies = [params] if "MessageBody" in params else params.get("Entries", [])
            payload = sum(len(str(entry.get("MessageBody", "")).encode()) for entry in bodies)
            self.usage.sqs_requests += max(1, -(-payload // SQS_BILLING_BYTES))
        elif service == "secretsmanager":
            self.usage.secrets_calls += 1
        if model.name == "TransactWriteItems":
            self.usage.transact_actions.update(kind for action in params["TransactItems"] for kind in action)

    # -- time on the wire (one call at a time per thread) ---------------------------------------------
    def _on_wire(self, **_: Any) -> None:
        self._sent[threading.get_ident()] = time.perf_counter()

    def _off_wire(self, **_: Any) -> None:
        sent = self._sent.pop(threading.get_ident(), None)
        if sent is not None:
            self.excluded_s += time.perf_counter() - sent

    # -- DynamoDB request units ----------------------------------------------------------------------
    def _before_write(self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        started = time.perf_counter()
        context["bench_targets"] = [
            (table, key, self._size(table, key)) for table, key, _ in _targets(model.name, params, self._key_of)
        ]
        context["bench_call"] = (model.name, params)
        self.excluded_s += time.perf_counter() - started

    def _dynamodb_units(self, context: dict[str, Any], parsed: Any = None, **_: Any) -> None:
        """After a call, whether it succeeded or failed (``after-call-error`` passes no model)."""
        started = time.perf_counter()
        operation, params = context.get("bench_call", ("", {}))
        transactional = operation.startswith("Transact")
        # Writes: each item at the larger of its size before and after (a failed condition
        # leaves it as it was, and is paid all the same).
        for table, key, before in context.get("bench_targets", []):
            after = self._size(table, key)
            self.usage.write_units += cost.write_units(max(before, after), transactional=transactional)
        units = _read_units(operation, params, parsed or {})
        self.usage.read_units += units
        if operation in ("GetItem", "BatchGetItem") and not _consistent(operation, params):
            self.usage.cached_read_units += units
        self.excluded_s += time.perf_counter() - started

    def _key_of(self, table: str, item: dict[str, Any]) -> dict[str, Any]:
        if table not in self._keys:
            schema = self._peek.describe_table(TableName=table)["Table"]["KeySchema"]
            self._keys[table] = [part["AttributeName"] for part in schema]
        return {name: item[name] for name in self._keys[table]}

    def _size(self, table: str, key: dict[str, Any]) -> int:
        from mcp_platform.adapters.dynamodb.codec import item_size

        item = self._peek.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        return item_size(item) if item else 0


def _targets(
    operation: str, params: dict[str, Any], key_of: Callable[..., dict[str, Any]]
) -> list[tuple[str, dict[str, Any], str]]:
    """The items a write call may change or checks: (table, key, action)."""
    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        table = params["TableName"]
        key = params["Key"] if "Key" in params else key_of(table, params["Item"])
        return [(table, key, operation)]
    if operation == "TransactWriteItems":
        out = []
        for action in params["TransactItems"]:
            ((kind, body),) = action.items()
            key = body["Key"] if "Key" in body else key_of(body["TableName"], body["Item"])
            out.append((body["TableName"], key, kind))  # a ConditionCheck is priced as a write (assumed)
        return out
    if operation == "BatchWriteItem":
        out = []
        for table, requests in params["RequestItems"].items():
            for request in requests:
                body = request.get("PutRequest") or request.get("DeleteRequest")
                out.append((table, body["Key"] if "Key" in body else key_of(table, body["Item"]), "BatchWrite"))
        return out
    return []


def _consistent(operation: str, params: dict[str, Any]) -> bool:
    if operation == "BatchGetItem":
        return any(spec.get("ConsistentRead") for spec in params.get("RequestItems", {}).values())
    return bool(params.get("ConsistentRead"))


def _read_units(operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> float:
    """Read request units of one read call, from the items it returned (a key not found still
    costs the minimum; a Query's items are summed before rounding)."""
    from mcp_platform.adapters.dynamodb.codec import item_size

    if operation == "GetItem":
        item = parsed.get("Item")
        return cost.read_units(item_size(item) if item else 0, consistent=bool(params.get("ConsistentRead")))
    if operation == "BatchGetItem":
        units = 0.0
        for table, spec in params.get("RequestItems", {}).items():
            found = parsed.get("Responses", {}).get(table, [])
            consistent = bool(spec.get("ConsistentRead"))
            units += sum(cost.read_units(item_size(item), consistent=consistent) for item in found)
            units += (len(spec["Keys"]) - len(found)) * cost.read_units(0, consistent=consistent)
        return units
    if operation in ("Query", "Scan"):
        total = sum(item_size(item) for item in parsed.get("Items", []))
        return cost.read_units(total, consistent=bool(params.get("ConsistentRead")))
    if operation == "TransactGetItems":
        items = [response.get("Item") for response in parsed.get("Responses", [])]
        return sum(
            cost.read_units(item_size(item) if item else 0, consistent=True, transactional=True) for item in items
        )
    return 0.0


def _counted_app(
    aws: Any,
    counter: CallCounter,
    task_queue_url: str,
    dax: Any = None,
    metrics: io.StringIO | None = None,
    env: dict[str, str] | None = None,
) -> Any:
    from mcp_platform.adapters.dynamodb.api_keys import ApiKeyStore
    from mcp_platform.application.blocking import INLINE
    from mcp_platform.bootstrap.endpoint import build_app
    from tests.support import ask_tools, platform_tools

    dynamodb = counter.attach(aws.client("dynamodb"))
    ApiKeyStore(aws.table, aws.client("dynamodb")).mint("bench", key=BENCH_KEY)
    return build_app(
        aws.settings(MCP_TASK_QUEUE_URL=task_queue_url, **(env or {})),  # the tasks extension on, as deployed
        platform_tools,
        ask_tools,
        dynamodb=dynamodb,
        kinesis=counter.attach(aws.client("kinesis")),
        sqs=counter.attach(aws.client("sqs")),
        secretsmanager=counter.attach(aws.client("secretsmanager")),
        metrics_stream=metrics if metrics is not None else io.StringIO(),
        dax=dax,
        blocking=INLINE,  # as on Lambda (one request per environment): its time is Lambda's
    )


def _age_session(aws: Any, handle: str, seconds_left: int) -> None:
    """Move a session's expiry to ``seconds_left`` from now (an uncounted client: setup only)."""
    import time

    from mcp_platform.adapters.dynamodb import table_schema as ts

    aws.client("dynamodb").update_item(
        TableName=aws.table,
        Key={ts.PK: {"S": ts.session_pk(handle)}, ts.SK: {"S": ts.METADATA_SK}},
        UpdateExpression="SET #ttl = :ttl",
        ExpressionAttributeNames={"#ttl": ts.TTL},
        ExpressionAttributeValues={":ttl": {"N": str(int(time.time()) + seconds_left)}},
    )


@dataclass(frozen=True)
class Governance:
    """Rate limits and quotas an operation runs under, and the row of the same operation
    without them (its peer). Each rule allows far more than the bench makes: every call is
    admitted, so what is measured is what admission costs."""

    peer: str
    rules: str
    """What the label adds to the peer's."""
    rate_limits: tuple[str, ...] = ()
    """Rate-limit rule keys (principal, tool:<name>), each GOVERNED_ROOM per minute."""
    quota: bool = False
    """The principal's day quota (GOVERNED_ROOM per day): ingest keeps the totals it reads."""

    @property
    def label(self) -> str:
        return f"{self.peer}, {self.rules}"

    def env(self, limits_table: str) -> dict[str, str]:
        """The settings of the endpoint and of ingest, as the stack sets them."""
        from mcp_platform.config import EnvVars

        env = {}
        if self.rate_limits:
            env[EnvVars.RATE_LIMITS] = json.dumps({key: f"{GOVERNED_ROOM}/minute" for key in self.rate_limits})
            env[EnvVars.LIMITS_TABLE] = limits_table
        if self.quota:
            env[EnvVars.QUOTAS] = json.dumps({"principal": f"{GOVERNED_ROOM}/day"})
        return env

    @property
    def budget(self) -> tuple[int, int]:
        """(writes, reads) admission may add to the peer's calls: the requirement's "at most
        one extra write per limited call", and the quota's one read."""
        return (1 if self.rate_limits else 0), (1 if self.quota else 0)


@dataclass(frozen=True)
class Measured:
    """One counted operation: its AWS calls and, when it is priced, what it consumed."""

    label: str
    calls: dict[str, int]
    note: str
    usage: cost.Usage | None = None
    ingest: cost.Usage | None = None
    """What ingesting a batch of the operation's events consumed (priced operations only)."""
    governance: Governance | None = None
    audit: tuple[cost.Usage, ...] = ()
    """What auditing the table stream's records of the operation and of that batch consumed."""


_SEQUENCE = itertools.count(1)
_INGESTED: set[str] = set()  # call ids ingested so far: each call is a call of its own


class Ingest:
    """The ingest function's work on the events an operation put, counted like the endpoint's,
    and priced per batch (cost.INGEST_BATCH_EVENTS): the operation's own events, and copies of
    them under new call ids up to the batch's size, their callers spread over
    cost.INGEST_BATCH_PRINCIPALS principals, as one invocation on one shard."""

    def __init__(self, aws: Any, settings: Any) -> None:
        from mcp_platform.bootstrap.ingest import build_ingestor

        self.counter = CallCounter(peek=aws.client("dynamodb"))
        # As the ingest function builds it from its settings (with quotas, it keeps their totals).
        self._ingestor = build_ingestor(settings, dynamodb=self.counter.attach(aws.client("dynamodb")))

    def batch(self, records: list[bytes]) -> list[bytes]:
        """A full batch made of ``records`` (the operation's events), callers spread."""
        from mcp_platform.application.events.schema import ToolCallEvent

        events = [ToolCallEvent.from_bytes(data) for data in records]
        out = []
        for n in range(cost.INGEST_BATCH_EVENTS if events else 0):
            event = ToolCallEvent.from_dict(events[n % len(events)].to_dict())
            if n >= len(events) or event.event_id in _INGESTED:  # the bench's requests reuse their ids
                event.event_id = f"{event.event_id}-copy-{n}-{uuid.uuid4().hex[:8]}"
            _INGESTED.add(event.event_id)
            if n % cost.INGEST_BATCH_PRINCIPALS:
                event.principal = f"{event.principal}-{n % cost.INGEST_BATCH_PRINCIPALS}"
            out.append(event.to_bytes())
        return out

    def run(self, batch: list[bytes]) -> cost.Usage:
        """One invocation on ``batch`` (the ingest function's: one shard's records in order)."""
        from mcp_platform.application.events.ingest import ShardRecord

        # One shard's sequence, whichever Ingest reads it (one checkpoint per shard in the table).
        records = [ShardRecord(f"4959{next(_SEQUENCE):052d}", base64.b64encode(data).decode()) for data in batch]
        self.counter.reset()
        started, excluded = time.perf_counter(), self.counter.excluded_s
        outcome = self._ingestor.ingest_batch("bench/shardId-000000000000", records)
        assert outcome.failed is None, outcome.error
        ours = time.perf_counter() - started - (self.counter.excluded_s - excluded)
        usage = self.counter.usage
        usage.invocations = [cost.Invocation(our_ms=ours * 1000, calls=Counter(self.counter.calls))] if batch else []
        usage.operations = max(1, len(batch))
        return usage


class Audit:
    """The audit function's work on the session table's stream records, counted like the
    endpoint's: ``take`` reads what came since it last read, ``run`` processes it, as part of
    batches of cost.AUDIT_BATCH_RECORDS records (its requests are that share)."""

    def __init__(self, aws: Any) -> None:
        from mcp_platform.bootstrap.audit import build_audit_processor
        from tests.support.tables import audit_table_definition

        ddb = aws.client("dynamodb")
        self._audit_table = f"{aws.table}-audit"
        if self._audit_table not in ddb.list_tables()["TableNames"]:
            ddb.create_table(**audit_table_definition(self._audit_table))
        self.counter = CallCounter(peek=aws.client("dynamodb"))
        self._processor = build_audit_processor(
            aws.settings(AUDIT_TABLE_NAME=self._audit_table),
            dynamodb=self.counter.attach(aws.client("dynamodb")),
            kinesis=self.counter.attach(aws.client("kinesis")),
            sqs=aws.client("sqs"),
        )
        self._streams = aws.client("dynamodbstreams")
        self._arn = ddb.describe_table(TableName=aws.table)["Table"]["LatestStreamArn"]
        self._last: dict[str, str] = {}

    def take(self) -> list[dict[str, Any]]:
        """The records since the last ``take``."""
        from tests.support.session_stream import to_lambda_record

        out: list[dict[str, Any]] = []
        for shard in self._streams.describe_stream(StreamArn=self._arn)["StreamDescription"]["Shards"]:
            shard_id = shard["ShardId"]
            position: dict[str, str] = {"ShardIteratorType": "TRIM_HORIZON"}
            if shard_id in self._last:
                position = {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": self._last[shard_id]}
            iterator = self._streams.get_shard_iterator(StreamArn=self._arn, ShardId=shard_id, **position)
            cursor = iterator["ShardIterator"]
            while cursor:
                page = self._streams.get_records(ShardIterator=cursor, Limit=1000)
                if not page["Records"]:
                    break
                out += [to_lambda_record(record, self._arn) for record in page["Records"]]
                self._last[shard_id] = page["Records"][-1]["dynamodb"]["SequenceNumber"]
                cursor = page.get("NextShardIterator")
        return out

    def run(self, records: list[dict[str, Any]], *, operations: int = 1) -> cost.Usage:
        """``records`` processed, covering ``operations`` operations."""
        self.counter.reset()
        started, excluded = time.perf_counter(), self.counter.excluded_s
        for record in records:
            self._processor.process(record)
        ours = time.perf_counter() - started - (self.counter.excluded_s - excluded)
        usage = self.counter.usage
        usage.invocations = [cost.Invocation(our_ms=ours * 1000, calls=Counter(self.counter.calls))] if records else []
        usage.requests = len(records) / cost.AUDIT_BATCH_RECORDS
        usage.operations = operations
        return usage


class Operations:
    """Posts requests to one app and records each operation counted on it (``out``): its AWS
    calls and, when priced, what it consumed and what ingesting its events consumed."""

    def __init__(
        self,
        app: Any,
        counter: CallCounter,
        ingest: Ingest,
        metrics: io.StringIO,
        governance: Governance | None = None,
        audit: Audit | None = None,
    ) -> None:
        self.app = app
        self.counter = counter
        self.ingest = ingest
        self.audit = audit
        self.metrics = metrics
        self.governance = governance
        self.out: list[Measured] = []
        self.invocations: list[cost.Invocation] = []  # the current run's, one per request

    async def post(self, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        counter = self.counter
        before, excluded = Counter(counter.calls), counter.excluded_s
        started = time.perf_counter()
        bearer = {"authorization": f"Bearer {BENCH_KEY}"}
        status, answer_headers, raw = await asgi_post(self.app, "/mcp", {**bearer, **headers}, body)
        ours = time.perf_counter() - started - (counter.excluded_s - excluded)
        self.invocations.append(cost.Invocation(our_ms=ours * 1000, calls=counter.calls - before))
        assert status in (200, 202), (status, raw[:300])
        return status, answer_headers, raw

    async def counted(
        self, label: str, note: str, make: Callable[[int], Awaitable[Any]], *, priced: bool = False
    ) -> Any:
        counter, invocations, metrics = self.counter, self.invocations, self.metrics
        await make(0)  # warm: caches filled, lazy clients built
        counter.reset()
        invocations.clear()
        if priced and self.audit is not None:
            self.audit.take()  # the warm-up's changes are not this run's
        written = len(metrics.getvalue())
        result = await make(1)
        if not priced:
            self.out.append(Measured(label, dict(counter.calls), note, governance=self.governance))
            return result
        usage, records = counter.usage, list(counter.records)
        usage.log_bytes = len(metrics.getvalue()) - written
        # The operation's own changes, audited once its event is ingested (as usually on AWS: the
        # relay then finds it counted).
        changes = self.audit.take() if self.audit is not None else []
        counter.reset()  # what comes next is not this run's (with BENCH_COST_RUNS=1: the next warm-up)
        runs = [list(invocations)]
        for attempt in range(2, COST_RUNS + 1):  # the time is a median: this machine is shared
            counter.reset()
            invocations.clear()
            await make(attempt)
            runs.append(list(invocations))
            records += counter.records
        usage.invocations = cost.median_invocations(runs)
        batch = self.ingest.batch(records)
        if self.audit is not None:
            self.audit.take()
        ingested = self.ingest.run(batch)
        audited = []
        if self.audit is not None:
            audited.append(self.audit.run(changes))
            audited.append(self.audit.run(self.audit.take(), operations=max(1, len(batch))))  # per event
        calls = dict(sum((i.calls for i in runs[0]), Counter()))
        self.out.append(Measured(label, calls, note, usage, ingested, self.governance, tuple(audited)))
        return result

    async def modern(self, name: str, arguments: dict[str, Any], **params: Any) -> dict[str, Any]:
        headers, body = modern_call("x", name, arguments)
        body["params"].update(params)
        _, _, raw = await self.post(headers, body)
        answer: dict[str, Any] = json.loads(raw)
        return answer


SIZED_SESSIONS = (1, 50, 200)  # context messages a session holds before the measured call
SIZED_NOTE = "x" * 300  # ~300 bytes a note, as an agent's notes go


async def _sized_call(
    modern: Callable[..., Awaitable[dict[str, Any]]], name: str, arguments: dict[str, Any], _: int
) -> dict[str, Any]:
    return await modern(name, arguments)


async def _size_rows(operations: Operations) -> None:
    """The session tools on sessions holding 1, 50 and 200 context messages, each prefilled
    through the real commit path (append_note): what one call costs must not grow with them."""
    modern = operations.modern
    for held in SIZED_SESSIONS:
        opened = await modern("open_session", {})
        handle = opened["result"]["structuredContent"]["session"]
        for _ in range(held - 1):  # the counted call's warm-up appends the last one
            await modern("append_note", {"session": handle, "text": SIZED_NOTE})
        await operations.counted(
            f"2026 tools/call, append-only session tool, session holding {held} context messages",
            f"append_note of ~300 bytes on a session holding {held} notes of ~300 bytes",
            functools.partial(_sized_call, modern, "append_note", {"session": handle, "text": SIZED_NOTE}),
            priced=True,
        )
        await operations.counted(
            f"2026 tools/call, read-modify-write session tool, session holding {held} context messages",
            f"increment_counter on a session holding {held} notes of ~300 bytes (reads_context=False: none read)",
            functools.partial(_sized_call, modern, "increment_counter", {"session": handle}),
            priced=True,
        )


async def _operations(app: Any, counter: CallCounter, aws: Any, metrics: io.StringIO) -> list[Measured]:
    operations = Operations(app, counter, Ingest(aws, aws.settings()), metrics, audit=Audit(aws))
    out, post, counted, modern = operations.out, operations.post, operations.counted, operations.modern

    opened = await counted(
        "2026 session open",
        "open_session: the session's metadata item written",
        lambda _: modern("open_session", {}),
        priced=True,
    )
    handle = opened["result"]["structuredContent"]["session"]
    await counted("2026 tools/call, no session", "echo", lambda _: modern("echo", {"text": "hi"}), priced=True)
    await counted(
        "2026 tools/call, append-only session tool",
        "append_note on a session handle",
        lambda _: modern("append_note", {"session": handle, "text": "n"}),
        priced=True,
    )
    await counted(
        "2026 tools/call, read-modify-write session tool",
        "increment_counter on a session handle: committed under the version of the attribute it read; "
        "its context not loaded (reads_context=False)",
        lambda _: modern("increment_counter", {"session": handle}),
        priced=True,
    )
    await _size_rows(operations)
    await counted(
        "2026 tools/call, read-only session tool",
        "session_info on a session handle",
        lambda _: modern("session_info", {"session": handle}),
    )
    await counted(
        "2026 tools/call, read-only session tool that reads a cached session",
        "read_notes (consistency='eventual', X6): its BatchGet may be served by the DAX item cache",
        lambda _: modern("read_notes", {"session": handle}),
    )

    async def aged_read(_: int) -> Any:
        _age_session(aws, handle, 60)  # less than half of the session's lifetime left
        return await modern("session_info", {"session": handle})

    await counted(
        "2026 tools/call, read-only session tool, past half the session's lifetime",
        "session_info: its expiry slides (D7) with one ttl-only UpdateItem, no version bump",
        aged_read,
    )

    async def modern_list(_: int) -> Any:
        return await post(*modern_request("l", "tools/list"))

    await counted("2026 tools/list", "", modern_list)

    async def input_round(attempt: int) -> Any:
        meta = {**ELICITING, "io.modelcontextprotocol/idempotencyKey": f"note-{attempt}"}
        arguments = {"session": handle, "tag": f"t{attempt}"}
        first = await modern("noted_answer", arguments, _meta=meta)
        assert first["result"]["resultType"] == "input_required", first
        return first, meta, arguments

    first, meta, arguments = await counted(
        "2026 input-required round 1", "noted_answer asks: InputRequiredResult + sealed requestState", input_round
    )

    counter.calls.clear()  # round 2 of the counted round 1 (warm: the key secret is cached)
    answer = {"note": {"action": "accept", "content": {"note": "hello"}}}
    state = first["result"]["requestState"]
    done = await modern("noted_answer", arguments, _meta=meta, inputResponses=answer, requestState=state)
    assert done["result"]["structuredContent"]["note"] == "hello", done
    out.append(
        Measured(
            "2026 input-required round 2",
            dict(counter.calls),
            "the answer: state consumed (one-time), session read, commit, event",
        )
    )

    async def create_task(_: int) -> str:
        created = await modern("session_report", {"session": handle}, _meta=WITH_TASKS)
        assert created["result"]["resultType"] == "task", created
        return str(created["result"]["taskId"])

    task_id = await counted(
        "2026 tools/call answered as a task",
        "session_report with the tasks extension: the task written, its message queued (the worker runs it)",
        create_task,
    )

    async def poll_task(_: int) -> Any:
        headers, body = modern_request("g", "tasks/get", {"taskId": task_id})
        return await post({**headers, "mcp-name": task_id}, {**body, "params": {**body["params"], "_meta": WITH_TASKS}})

    await counted("2026 tasks/get", "the task's status (owner-checked), from any instance", poll_task)

    async def initialize(_: int) -> dict[str, str]:
        _status, answer_headers, _raw = await post({"accept": BOTH}, INITIALIZE)
        session = {
            "accept": BOTH,
            "mcp-session-id": answer_headers["mcp-session-id"],
            "mcp-protocol-version": HANDSHAKE,
        }
        await post(session, INITIALIZED)
        return session

    session = await counted(
        "2025 initialize + notifications/initialized",
        "initialize persists the transport session (PutItem); the notification checks it (GetItem)",
        initialize,
        priced=True,
    )
    await counted(
        "2025 tools/call in a session, no session tool",
        "echo: the Mcp-Session-Id read",
        lambda i: post(session, tool_call(f"e{i}", "echo", {"text": "hi"})),
        priced=True,
    )
    await counted(
        "2025 tools/call, session tool on the transport session",
        "append_note: its BatchGet doubles as the session check",
        lambda i: post(session, tool_call(f"a{i}", "append_note", {"text": "n"})),
        priced=True,
    )
    await counted(
        "2025 tools/list", "", lambda i: post(session, {"jsonrpc": "2.0", "id": f"l{i}", "method": "tools/list"})
    )
    return out


PRINCIPAL_LIMIT = Governance("2026 tools/call, no session", "principal rate limit", rate_limits=("principal",))
PRINCIPAL_AND_TOOL_LIMITS = Governance(
    "2026 tools/call, no session", "principal + tool rate limits", rate_limits=("principal", "tool:echo")
)
DAY_QUOTA = Governance("2026 tools/call, no session", "day quota", quota=True)
SESSION_TOOL_LIMIT_AND_QUOTA = Governance(
    "2026 tools/call, append-only session tool",
    "principal rate limit + day quota",
    rate_limits=("principal",),
    quota=True,
)
SESSION_2025_LIMIT = Governance(
    "2025 tools/call, session tool on the transport session", "principal rate limit", rate_limits=("principal",)
)


async def _governed_operations(aws: Any, task_queue_url: str) -> list[Measured]:
    """Operations of the table above under rate limits and quotas: each on an endpoint and an
    ingest configured with its rules (as the stack configures both), counted and priced alike."""
    from tests.support.governance import create_limits_table

    # The rate-limit counters' table (pk only), as the stack creates it; moto's tables outlive
    # its server within a process, hence a name of its own.
    limits_table = f"limits-{uuid.uuid4().hex[:8]}"
    create_limits_table(aws.client("dynamodb"), limits_table)
    out: list[Measured] = []

    def under(governance: Governance) -> Operations:
        counter = CallCounter(peek=aws.client("dynamodb"))
        metrics = io.StringIO()
        env = governance.env(limits_table)
        app = _counted_app(aws, counter, task_queue_url, metrics=metrics, env=env)
        return Operations(app, counter, Ingest(aws, aws.settings(**env)), metrics, governance, Audit(aws))

    echo_notes = {
        PRINCIPAL_LIMIT: "echo; the principal's window counted: one conditional UpdateItem (ADD) on the limits table",
        PRINCIPAL_AND_TOOL_LIMITS: "echo; the principal's and the tool's windows counted all or none: "
        "one TransactWriteItems of two Updates on the limits table",
        DAY_QUOTA: "echo; the principal's usage totals read (eventually consistent: DAX may serve it); "
        "ingest ADDs the call to them in its counting transaction",
    }

    def echo(operations: Operations) -> Callable[[int], Awaitable[Any]]:
        return lambda _: operations.modern("echo", {"text": "hi"})

    for governance, note in echo_notes.items():
        operations = under(governance)
        await operations.counted(governance.label, note, echo(operations), priced=True)
        out += operations.out

    operations = under(SESSION_TOOL_LIMIT_AND_QUOTA)
    modern = operations.modern
    handle = (await modern("open_session", {}))["result"]["structuredContent"]["session"]
    await operations.counted(
        SESSION_TOOL_LIMIT_AND_QUOTA.label,
        "append_note on a session handle; the principal's window counted and its usage totals read",
        lambda _: modern("append_note", {"session": handle, "text": "n"}),
        priced=True,
    )
    out += operations.out

    operations = under(SESSION_2025_LIMIT)
    _status, answer_headers, _raw = await operations.post({"accept": BOTH}, INITIALIZE)
    session = {"accept": BOTH, "mcp-session-id": answer_headers["mcp-session-id"], "mcp-protocol-version": HANDSHAKE}
    await operations.post(session, INITIALIZED)
    await operations.counted(
        SESSION_2025_LIMIT.label,
        "append_note; the principal's window counted",
        lambda i: operations.post(session, tool_call(f"a{i}", "append_note", {"text": "n"})),
        priced=True,
    )
    return out + operations.out


async def _agent_mix(app: Any) -> None:
    """An agent's 20 calls in one 2025 session: lists, read-only and committing tools."""
    bearer = {"authorization": f"Bearer {BENCH_KEY}"}
    _, answer_headers, _ = await asgi_post(app, "/mcp", {**bearer, "accept": BOTH}, INITIALIZE)
    session = {**bearer, "accept": BOTH, "mcp-session-id": answer_headers["mcp-session-id"]}
    session["mcp-protocol-version"] = HANDSHAKE
    await asgi_post(app, "/mcp", session, INITIALIZED)
    plan = ["list", "note", "read", "read", "echo", "note", "read", "list", "info", "note"] * 2
    for n, step in enumerate(plan):
        if step == "list":
            body = {"jsonrpc": "2.0", "id": f"m{n}", "method": "tools/list"}
        elif step == "note":
            body = tool_call(f"m{n}", "append_note", {"text": f"n{n}"})
        elif step == "read":
            body = tool_call(f"m{n}", "read_notes", {})
        elif step == "info":
            body = tool_call(f"m{n}", "session_info", {})
        else:
            body = tool_call(f"m{n}", "echo", {"text": "hi"})
        status, _, raw = await asgi_post(app, "/mcp", session, body)
        assert status == 200, raw[:200]


def _cache_mix_row(aws: Any) -> dict[str, Any]:
    """The DAX stand-in's hit ratio over the agent's mix: which share of the table reads the item
    cache served (a DAX cluster's item cache would, with writers going through it)."""
    from local.dax_standin import ItemCacheStandIn

    counter = CallCounter()
    cache = ItemCacheStandIn(counter.attach(aws.client("dynamodb")))
    app = _counted_app(aws, counter, "", dax=cache)
    asyncio.run(_agent_mix(app))
    reads = sum(n for name, n in counter.calls.items() if "GetItem" in name)
    detail = (
        f"{cache.stats.hits} of {cache.stats.hits + cache.stats.misses} eventually consistent item reads served "
        f"from the item cache; {reads} reads reached the table over 20 calls "
        f"(list x4, read_notes x6, session_info x2, append_note x6, echo x2 in one 2025 session)"
    )
    return row("DAX item cache: hit ratio, an agent's 20 calls", round(cache.stats.hit_ratio, 2), 0, "ratio", detail)


@functools.cache
def measure() -> tuple[tuple[Measured, ...], dict[str, Any]]:
    """Every operation counted (the priced ones measured too), and the item cache's row: once
    per process (``make bench`` prints both tables from it, the docs build renders both)."""
    from tests.support.aws import fake_credentials
    from tests.support.endpoint import aws_stack

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request log
    with fake_credentials(), aws_stack() as aws:
        counter = CallCounter(peek=aws.client("dynamodb"))
        metrics = io.StringIO()
        task_queue = aws.client("sqs").create_queue(QueueName="bench-tasks")["QueueUrl"]
        app = _counted_app(aws, counter, task_queue, metrics=metrics)
        measured = asyncio.run(_operations(app, counter, aws, metrics))
        measured += asyncio.run(_governed_operations(aws, task_queue))
        cache_row = _cache_mix_row(aws)
    return tuple(measured), cache_row


def dax_hit_ratio() -> float:
    """The item cache's measured hit ratio (the agent's mix): the share of cached reads DAX serves."""
    return float(measure()[1]["ours"])


def price(m: Measured) -> cost.Cost:
    """An operation's cost per million: its own, its ingest's per event, its audit's."""
    assert m.usage is not None, f"{m.label} is not priced"
    return cost.cost(m.usage, m.ingest, audit=m.audit, dax_hit_ratio=dax_hit_ratio())


def priced() -> list[tuple[Measured, cost.Cost]]:
    """The priced operations and their cost per million."""
    return [(m, price(m)) for m in measure()[0] if m.usage is not None]


READS = ("GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems")
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")


@dataclass(frozen=True)
class GovernanceCheck:
    """A governed operation against its peer (the same operation without rules): the calls
    admission added on the endpoint and on ingest, and whether they fit the budget."""

    governed: Measured
    peer: Measured

    @property
    def governance(self) -> Governance:
        assert self.governed.governance is not None
        return self.governed.governance

    @property
    def extra_calls(self) -> Counter[str]:
        return Counter(self.governed.calls) - Counter(self.peer.calls)

    @property
    def missing_calls(self) -> Counter[str]:
        """Calls the peer makes and the governed operation does not (expected: none)."""
        return Counter(self.peer.calls) - Counter(self.governed.calls)

    def _kind(self, kinds: tuple[str, ...]) -> int:
        return sum(n for name, n in self.extra_calls.items() if cost._api(name).removeprefix("dynamodb.") in kinds)

    @property
    def extra_writes(self) -> int:
        return self._kind(WRITES)

    @property
    def extra_reads(self) -> int:
        return self._kind(READS)

    @property
    def extra_actions(self) -> Counter[str]:
        """The endpoint's transaction actions added (a TransactWriteItems counting several rules)."""
        return _usage(self.governed).transact_actions - _usage(self.peer).transact_actions

    @property
    def extra_ingest(self) -> Counter[str]:
        """Ingest's calls and transaction actions added, per batch (cost.INGEST_BATCH_EVENTS events)."""
        governed, peer = _ingest(self.governed), _ingest(self.peer)
        return (governed.calls - peer.calls) + (governed.transact_actions - peer.transact_actions)

    @property
    def within_budget(self) -> bool:
        writes, reads = self.governance.budget
        # A quota's totals: one more Update per principal's month in each of the batch's transactions.
        transactions = _ingest(self.governed).calls["dynamodb.TransactWriteItems"]
        ingest = (
            Counter({"Update": cost.INGEST_BATCH_PRINCIPALS * transactions}) if self.governance.quota else Counter()
        )
        return (
            self.extra_writes <= writes
            and self.extra_reads <= reads
            and self.extra_writes + self.extra_reads == sum(self.extra_calls.values())  # nothing else added
            and not self.missing_calls
            and not self.extra_ingest - ingest
        )

    def describe_calls(self) -> str:
        parts = [f"{name.removeprefix('dynamodb.')}{f' x{n}' if n > 1 else ''}" for name, n in self.extra_calls.items()]
        actions = ", ".join(f"{n} {kind}" for kind, n in sorted(self.extra_actions.items()))
        return " + ".join(sorted(parts)) + (f" ({actions})" if actions else "") or "none"

    def describe_ingest(self) -> str:
        return ", ".join(f"{n} {name.removeprefix('dynamodb.')}" for name, n in sorted(self.extra_ingest.items())) or (
            "none"
        )

    def describe_budget(self) -> str:
        writes, reads = self.governance.budget
        return f"{writes} write{'s' if writes != 1 else ''} + {reads} read{'s' if reads != 1 else ''}"


def _usage(m: Measured) -> cost.Usage:
    assert m.usage is not None, f"{m.label} is not priced"
    return m.usage


def _ingest(m: Measured) -> cost.Usage:
    return m.ingest if m.ingest is not None else cost.Usage()


def governance_checks() -> list[GovernanceCheck]:
    """Each governed operation with its peer."""
    measured = measure()[0]
    by_label = {m.label: m for m in measured}
    return [GovernanceCheck(m, by_label[m.governance.peer]) for m in measured if m.governance is not None]


def governance_table() -> list[list[str]]:
    """What governance adds to its peer per operation: a header, then one line per governed
    operation (the calls added; request units and USD per million operations)."""
    lines = [
        [
            "operation",
            "endpoint adds",
            "ingest adds",
            "budget",
            "RRU",
            "WRU",
            "ingest WRU",
            "DynamoDB",
            "Lambda",
            "ingest",
            "total",
            "check",
        ]
    ]
    for check in governance_checks():
        governed, peer = _usage(check.governed), _usage(check.peer)
        c, p = price(check.governed), price(check.peer)
        lines.append(
            [
                check.governed.label,
                check.describe_calls(),
                check.describe_ingest(),
                check.describe_budget(),
                f"{governed.read_units - peer.read_units:+g}",
                f"{governed.write_units - peer.write_units:+g}",
                f"{_ingest(check.governed).write_units - _ingest(check.peer).write_units:+g}",
                _signed_usd(c.dynamodb_usd - p.dynamodb_usd),
                _signed_usd(c.lambda_usd - p.lambda_usd),
                _signed_usd(c.ingest_usd - p.ingest_usd),
                _signed_usd(c.total - p.total),
                "within" if check.within_budget else "OVER BUDGET",
            ]
        )
    return lines


def _signed_usd(value: float) -> str:
    return ("+" if value >= 0 else "-") + _usd(abs(value))


_usd = cost.usd


def cost_table() -> list[list[str]]:
    """The cost table: a header, then one line per priced operation (USD per million operations)."""
    lines = [
        [
            "operation",
            "requests",
            "billed ms",
            "RRU",
            "WRU",
            "Kinesis KB",
            "Lambda",
            "DynamoDB",
            "Kinesis",
            "logs, X-Ray",
            "ingest",
            "audit",
            "total",
        ]
    ]
    for m, c in priced():
        usage = m.usage
        assert usage is not None
        lines.append(
            [
                m.label,
                str(len(usage.invocations)),
                " + ".join(map(str, c.billed_ms)),
                f"{usage.read_units:g}",
                f"{usage.write_units:g}",
                f"{sum(usage.kinesis_records) / 1024:.1f}",
                _usd(c.lambda_usd),
                _usd(c.dynamodb_usd),
                _usd(c.kinesis_usd),
                _usd(c.other_usd),
                _usd(c.ingest_usd),
                _usd(c.audit_usd),
                _usd(c.total),
            ]
        )
    return lines


def _text_table(title: str, table: list[list[str]], *, left: int = 1) -> list[str]:
    """``table`` under ``title``, its first ``left`` columns left-aligned, the others right."""
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    text = ["", title, ""]
    for n, line in enumerate(table):
        text.append(
            "  ".join(
                cell.ljust(w) if i < left else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(line, widths, strict=True))
            )
        )
        if n == 0:
            text.append("-" * len(text[-1]))
    return text


def extra_tables() -> str:
    """Printed under ``make bench``'s table: cost per million operations, what governance adds
    to it, then the prices."""
    text = _text_table("Cost per million operations (USD)", cost_table())
    text += _text_table(
        "What rate limits and quotas add to the same operation without them (per million operations, USD)",
        governance_table(),
        left=4,
    )
    text += _text_table("What the edge in front of the endpoint adds (USD)", cost.edge_table())
    text += ["", cost.edge_assumptions()]
    text += ["", cost.assumptions(dax_hit_ratio()), "", "Prices:"]
    text += [f"  {name}: {price} ({source})" for name, price, source in cost.price_rows()]
    text += [idle_cost.text_tables(*event_size())]
    return "\n".join(text)


def event_size() -> tuple[int, int]:
    """(bytes of the largest tool-call event, the most events one priced operation puts): what
    the minimal profile's shard limits are computed for (the cost table's Kinesis KB)."""
    records = [m.usage.kinesis_records for m, _ in priced() if m.usage is not None and m.usage.kinesis_records]
    return max(max(r) for r in records), max(len(r) for r in records)


def run() -> list[dict[str, Any]]:
    measured, cache_row = measure()
    rows = []
    for m in measured:
        detail = ", ".join(f"{name}={n}" for name, n in sorted(m.calls.items())) or "none"
        rows.append(
            row(
                f"AWS calls: {m.label}", sum(m.calls.values()), 0, "calls", f"{detail}{'; ' + m.note if m.note else ''}"
            )
        )
    for check in governance_checks():
        verdict = "within budget" if check.within_budget else "OVER BUDGET"
        detail = f"{verdict} ({check.describe_budget()} per call): adds {check.describe_calls()} to the peer's calls "
        detail += f"(the same operation without rules); its ingest adds {check.describe_ingest()} "
        detail += f"per batch of {cost.INGEST_BATCH_EVENTS} events"
        governed, peer = sum(check.governed.calls.values()), sum(check.peer.calls.values())
        rows.append(row(f"governance budget: {check.governed.label}", governed, peer, "calls", detail))
    rows.append(cache_row)
    for m, c in priced():
        parts = f"Lambda {_usd(c.lambda_usd)} + DynamoDB {_usd(c.dynamodb_usd)} + Kinesis {_usd(c.kinesis_usd)}"
        parts += f" + logs/X-Ray {_usd(c.other_usd)} + ingest {_usd(c.ingest_usd)} + audit {_usd(c.audit_usd)}"
        parts += f"; billed {'+'.join(map(str, c.billed_ms))} ms"
        rows.append(row(f"cost per million: {m.label}", round(c.total, 2), None, "USD", parts))
    return rows


if __name__ == "__main__":
    for line in run():
        print(line)
    print(extra_tables())
