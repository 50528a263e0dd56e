"""The session store (D1-D10, X3-X5): one DynamoDB table, optionally fronted by DAX.

Construct it once per process and inject the client(s)::

    store = SessionStore.from_settings(settings)            # DAX client iff DAX_ENDPOINT is set
    store = SessionStore("table", client=moto_client)        # tests
    store.gateway.calls                                      # AWS calls made, per operation

It is composed of three parts over one :class:`~.table.SessionTable` (table, gateway, clock,
budgets, the "alive" condition): :class:`~.lifecycle.SessionLifecycle` (create, read, append,
update, extend, end), :class:`~.commits.ToolCallCommits` (load, record, commit, list tool calls)
and, inside the latter, :class:`~.actions.CommitActions` (a commit plan as the transaction's
actions: what a commit writes and checks is decided by ``application.sessions.commit_plan``,
the rules the in-memory store of ``mcp_platform.testing`` applies too). The store only forwards
to them; it implements the application's ``SessionRepository`` port.

Which reads may be served by DAX, and which must use ConsistentRead (X4)
-------------------------------------------------------------------------
With DAX on, every item operation goes through the DAX client (X3), so writes are
write-through and the item cache stays coherent with our own writes. Writes that bypass
DAX (other functions, the console) can leave an item stale for up to the item-cache TTL
(5 min, X2); query results can be stale for the query-cache TTL (1 min). Hence:

Who writes what a cached read may return (X6): session metadata items are written only by the
endpoint and the task worker, both through DAX when it is on. Ingest writes tool-call records,
usage counters and dedupe markers, never a metadata item (it only ConditionChecks it); audit
deletes the items a session held after DynamoDB's TTL removed its metadata, and a cached metadata
item of such a session already carries a ttl in the past, so every reader confirms it
consistently before answering. The staleness a cached read can show is therefore bounded by
writes made outside the platform (the console, a script) and by the item-cache TTL.

May be served by DAX (eventually consistent, tolerates <= 5 min staleness):
  * ``get_session(..., consistent=False)``: the owner never changes and the ttl only grows
    while a session is alive, so a cached *live* answer is a safe answer for auth and for
    display. A cached "missing" or "expired" answer may be stale (a negative-cache entry, an
    extension written elsewhere), so that case is confirmed with one consistent read.
  * the 2025 ``Mcp-Session-Id`` check on every request (``transport/legacy.py``), and
    ``load_for_tool_call(..., consistent=False)`` for a read-only tool declared
    ``consistency="eventual"`` (X6): both only decide "exists, is the caller's, is alive";
  * ``list_tool_calls(..., consistent=False)``: records are immutable; a page may miss a
    record committed in the last minute.
  * ``expiring_within``: a GSI query (GSIs are never strongly consistent); a maintenance
    signal, re-checked against the clock.

Must use ConsistentRead (bypasses the cache; DAX passes it through to DynamoDB):
  * the read of every optimistic-locking update (``update_metadata``, D2): a stale version
    would only produce a guaranteed conflict;
  * ``load_for_tool_call``: the version it returns is the commit's expected version, the
    expiry decides whether the call may run, and the marker decides whether it is a replay;
  * every read that explains a failed commit (is the marker there, is the session gone, which
    version won);
  * ``get_session(..., consistent=True)`` wherever the caller decides on the latest value
    right after a write (session existence after create/end, D6/X4).
Writes carry their own conditions (alive, version, attribute_not_exists), so the final
decision is always made by DynamoDB on the latest item, whatever any cache says.

Version arithmetic (D2, whole session and per attribute)
---------------------------------------------------------
The metadata item carries two kinds of version:

* ``version`` (D2): one more on every write of the metadata item other than the ttl: appends
  (D3), tool-call commits of every effect, ``update_metadata``, ``end_session``. A write
  conditioned on ``version = :expected`` (``update_metadata``; a read-modify-write run that read
  ``ctx.session``, which may have looked at anything) conflicts with every other write.
* ``attribute_versions[n]``: one more on every committed *change* of ``attributes[n]`` (an
  absent entry is 0). A write of the whole map under ``version = :expected`` (``update_metadata``,
  ``set_attributes``) knows the stored map exactly, so it stores the versions with one more for
  each name whose value it changes (set, changed or removed: ``Session.versions_after``). A
  read-modify-write run that read attributes one by one (``ctx.attribute``) commits under
  ``attribute_versions[n] = seen`` for each attribute it read or writes
  (``attribute_not_exists`` when seen is 0), and for each it changed sets ``attributes[n]`` and
  ``attribute_versions[n] = seen + 1``. It still adds one to ``version`` (a whole-session reader
  must see it) but does not check it: appends and writes to other attributes never make it run
  again; a write to an attribute it read does. After such a commit the held state is exact for
  the attributes it read (value and version together), a lower bound for the rest.
* ttl-only writes (``extend_expiry``, ``slide_expiry``, D7) change neither.

An item written before ``attribute_versions`` was kept has none (``Session.attribute_versions``
is None): its first per-attribute commit falls back to ``version = :expected`` and stores them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mcp_platform.adapters.dynamodb.clients import build_dynamo_clients
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.adapters.dynamodb.sessions.commits import ToolCallCommits
from mcp_platform.adapters.dynamodb.sessions.lifecycle import SessionLifecycle
from mcp_platform.adapters.dynamodb.sessions.table import SessionTable
from mcp_platform.application.sessions.changes import SessionChanges
from mcp_platform.application.sessions.commit_plan import CALL_RECORD_BUDGET_BYTES, DEFAULT_CONTEXT_BUDGET_BYTES
from mcp_platform.application.sessions.model import (
    KIND_APPLICATION,
    STATUS_ACTIVE,
    CommitResult,
    ExpiringSession,
    Session,
    ToolCall,
    ToolCallPage,
    ToolCallResult,
)
from mcp_platform.application.sessions.retry import CONFLICT_BACKOFF, Backoff
from mcp_platform.config import CONTEXT_IN_ITEMS, Settings, committed_event_as_text, session_context_layout
from mcp_platform.protocol.clock import Clock, SystemClock

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class SessionStore:
    """Create/get/append/update/extend/end sessions; record, commit and list tool calls."""

    def __init__(
        self,
        table_name: str,
        *,
        client: DynamoDBClient | None = None,
        control_client: DynamoDBClient | None = None,
        gateway: DynamoGateway | None = None,
        ttl_seconds: int = 3600,
        clock: Clock | None = None,
        backoff: Backoff | None = None,
        context_budget_bytes: int = DEFAULT_CONTEXT_BUDGET_BYTES,
        conflict_backoff: Backoff | None = None,
        record_budget_bytes: int = CALL_RECORD_BUDGET_BYTES,
        context_layout: str = CONTEXT_IN_ITEMS,
        event_as_text: bool = False,
    ) -> None:
        """``gateway``, or the ``client`` (and ``control_client``) to build one from: the store is
        given its clients (:meth:`from_settings` builds them from settings), never finds them."""
        if gateway is None:
            if client is None:
                raise TypeError("SessionStore needs a gateway or a client (SessionStore.from_settings builds them)")
            gateway = DynamoGateway(client, control_client)
        self._table = SessionTable(
            table_name,
            gateway,
            ttl_seconds=ttl_seconds,
            clock=clock or SystemClock(),
            backoff=backoff or Backoff(),
            # TransactionConflict retries: a longer budget when the default policy is used.
            conflict_backoff=conflict_backoff or (backoff if backoff is not None else CONFLICT_BACKOFF),
            context_budget_bytes=context_budget_bytes,
            record_budget_bytes=record_budget_bytes,
            context_layout=context_layout,
            event_as_text=event_as_text,
        )
        self.lifecycle = SessionLifecycle(self._table)
        self.commits = ToolCallCommits(self._table)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        dynamodb: DynamoDBClient | None = None,
        dax: DynamoDBClient | None = None,
        clock: Clock | None = None,
        backoff: Backoff | None = None,
    ) -> SessionStore:
        """Build the store with the DAX client when ``settings.dax_endpoint`` is set (X3/X5)."""
        clients = build_dynamo_clients(settings, dynamodb=dynamodb, dax=dax)
        return cls(
            settings.session_table,
            gateway=DynamoGateway(clients.data, clients.control),
            ttl_seconds=settings.session_ttl_seconds,
            clock=clock,
            backoff=backoff,
            context_layout=session_context_layout(settings),
            event_as_text=committed_event_as_text(settings),
        )

    # -- what the other adapters built on this table share -----------------------------------
    @property
    def table_name(self) -> str:
        return self._table.table_name

    @property
    def gateway(self) -> DynamoGateway:
        return self._table.gateway

    @property
    def clock(self) -> Clock:
        return self._table.clock

    @property
    def ttl_seconds(self) -> int:
        return self._table.ttl_seconds

    @property
    def conflict_backoff(self) -> Backoff:
        return self._table.conflict_backoff

    @conflict_backoff.setter
    def conflict_backoff(self, backoff: Backoff) -> None:
        self._table.conflict_backoff = backoff

    @property
    def context_budget_bytes(self) -> int:
        return self._table.context_budget_bytes

    @context_budget_bytes.setter
    def context_budget_bytes(self, budget: int) -> None:
        self._table.context_budget_bytes = budget

    # -- lifecycle ----------------------------------------------------------------------------
    def create_session(
        self,
        owner: str,
        *,
        session_id: str | None = None,
        kind: str = KIND_APPLICATION,
        attributes: dict[str, Any] | None = None,
    ) -> Session:
        return self.lifecycle.create_session(owner, session_id=session_id, kind=kind, attributes=attributes)

    def get_session(
        self, session_id: str, *, owner: str | None = None, consistent: bool, with_context: bool = True
    ) -> Session:
        return self._table.get_session(session_id, owner=owner, consistent=consistent, with_context=with_context)

    def append_context(self, session_id: str, messages: Sequence[Any], *, owner: str | None = None) -> int:
        return self.lifecycle.append_context(session_id, messages, owner=owner)

    def update_metadata(
        self,
        session_id: str,
        mutate: Callable[[Session], Session],
        *,
        owner: str | None = None,
        current: Session | None = None,
    ) -> Session:
        return self.lifecycle.update_metadata(session_id, mutate, owner=owner, current=current)

    def extend_expiry(self, session_id: str, *, owner: str | None = None, seconds: int | None = None) -> int:
        return self.lifecycle.extend_expiry(session_id, owner=owner, seconds=seconds)

    def slide_expiry(self, session: Session, *, owner: str | None = None) -> Session:
        return self.lifecycle.slide_expiry(session, owner=owner)

    def end_session(self, session_id: str, *, owner: str | None = None) -> None:
        self.lifecycle.end_session(session_id, owner=owner)

    def expiring_within(self, minutes: int, *, status: str = STATUS_ACTIVE, limit: int = 100) -> list[ExpiringSession]:
        return self.lifecycle.expiring_within(minutes, status=status, limit=limit)

    # -- tool calls ---------------------------------------------------------------------------
    def load_for_tool_call(
        self,
        session_id: str,
        tool_call_id: str | None,
        *,
        owner: str | None,
        request_hash: str | None = None,
        consistent: bool = True,
        with_context: bool = True,
    ) -> tuple[Session, ToolCallResult | None]:
        return self.commits.load_for_tool_call(
            session_id,
            tool_call_id,
            owner=owner,
            request_hash=request_hash,
            consistent=consistent,
            with_context=with_context,
        )

    def record_tool_call(self, session_id: str, call: ToolCall, *, owner: str | None = None) -> ToolCallResult:
        return self.commits.record_tool_call(session_id, call, owner=owner)

    def commit(self, session: Session, record: ToolCall, changes: SessionChanges) -> CommitResult:
        return self.commits.commit(session, record, changes)

    def list_tool_calls(
        self,
        session_id: str,
        *,
        owner: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        consistent: bool,
    ) -> ToolCallPage:
        return self.commits.list_tool_calls(session_id, owner=owner, limit=limit, cursor=cursor, consistent=consistent)
