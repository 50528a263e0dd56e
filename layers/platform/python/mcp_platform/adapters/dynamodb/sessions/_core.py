"""Shared plumbing of the store: construction, keys, the "alive" condition, visibility rules."""

from __future__ import annotations

import math
import secrets
from typing import Any, NoReturn, Self

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.clients import build_dynamo_clients
from mcp_platform.adapters.dynamodb.codec import AttributeValue, attr_size, from_attr, require_epoch_seconds, to_attr
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.application.sessions.errors import (
    SessionCapacityExceeded,
    SessionEnded,
    SessionExpired,
    SessionNotFound,
)
from mcp_platform.application.sessions.model import Session
from mcp_platform.application.sessions.retry import CONFLICT_BACKOFF, Backoff
from mcp_platform.config import Settings
from mcp_platform.protocol.clock import Clock, SystemClock, iso_utc

Key = dict[str, AttributeValue]
Expression = tuple[str, dict[str, str], dict[str, AttributeValue]]

# D7/D10 "session alive": the item exists, has not expired, and was not ended.
ALIVE = "attribute_exists(#pk) AND #ttl > :now AND #st = :active"
# The context list lives in the metadata item and every call reads it: its stored size is
# capped (tracked in ``context_bytes``, checked atomically by the write that grows it) so the
# item stays far from DynamoDB's 400 KB limit, with room left for attributes and keys. 160 KiB,
# not more: the emulator of the local platform (moto) sizes an update as the old item plus the
# new value, counting the context twice, so 2 x context + attributes must stay below its 405 KB
# limit too (at 256 KiB every append past ~200 KB failed there); and a smaller item is a
# cheaper consistent read on every call (at most 40 read units instead of 64).
DEFAULT_CONTEXT_BUDGET_BYTES = 160 * 1024
ATTRIBUTES_BUDGET_BYTES = 64 * 1024
# One tool call is stored as two items, the record (its arguments) and the marker (its result,
# which replay reads): together they get this budget, so each stays far below the 400 KB item
# limit and a commit (both + the metadata item) far below the 4 MB transaction limit. Sizes
# follow DynamoDB's rules (``codec.attr_size``); the endpoint refuses larger arguments before
# the tool runs and a larger result before the commit.
CALL_RECORD_BUDGET_BYTES = 128 * 1024
CONTEXT_HAS_ROOM = "(attribute_not_exists(#cb) OR #cb <= :room)"
SESSION_KINDS = (ts.KIND_APPLICATION, ts.KIND_TRANSPORT)


class StoreCore:
    def __init__(
        self,
        table_name: str,
        *,
        client: Any | None = None,
        control_client: Any | None = None,
        gateway: DynamoGateway | None = None,
        ttl_seconds: int = 3600,
        clock: Clock | None = None,
        backoff: Backoff | None = None,
        context_budget_bytes: int = DEFAULT_CONTEXT_BUDGET_BYTES,
        conflict_backoff: Backoff | None = None,
        record_budget_bytes: int = CALL_RECORD_BUDGET_BYTES,
    ) -> None:
        if gateway is None:
            if client is None:
                clients = build_dynamo_clients(Settings.from_env(), dynamodb=control_client)
                client, control_client = clients.data, clients.control
            gateway = DynamoGateway(client, control_client)
        if ttl_seconds <= 0:
            raise ValueError(f"ttl_seconds must be positive, got {ttl_seconds}")
        self.table_name = table_name
        self.gateway = gateway
        self.ttl_seconds = ttl_seconds
        self.clock: Clock = clock or SystemClock()
        self.backoff = backoff or Backoff()
        # TransactionConflict retries: a longer budget when the default policy is used.
        self.conflict_backoff = conflict_backoff or (backoff if backoff is not None else CONFLICT_BACKOFF)
        self.context_budget_bytes = context_budget_bytes
        self.record_budget_bytes = record_budget_bytes

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        dynamodb: Any | None = None,
        dax: Any | None = None,
        clock: Clock | None = None,
        backoff: Backoff | None = None,
    ) -> Self:
        """Build the store with the DAX client when ``settings.dax_endpoint`` is set (X3/X5)."""
        clients = build_dynamo_clients(settings, dynamodb=dynamodb, dax=dax)
        return cls(
            settings.session_table,
            gateway=DynamoGateway(clients.data, clients.control),
            ttl_seconds=settings.session_ttl_seconds,
            clock=clock,
            backoff=backoff,
        )

    # -- time ------------------------------------------------------------------------------
    def _now(self) -> int:
        """Whole epoch seconds, floored: ``ttl > now`` then agrees with ``ttl <= now`` (D6)."""
        return math.floor(self.clock.now())

    def _iso_now(self) -> str:
        return iso_utc(self.clock.now())

    def _next_ttl(self, seconds: int | None = None) -> int:
        return require_epoch_seconds(self._now() + (self.ttl_seconds if seconds is None else seconds))

    # -- keys and conditions -----------------------------------------------------------------
    @staticmethod
    def _new_session_id(owner: str, kind: str, requested: str | None) -> str:
        """Check what create_session is given; the id to create: a fresh one, or ``requested``
        when it has the minted format (no other id could ever be looked up)."""
        if not owner:
            raise ValueError("owner is required")
        if kind not in SESSION_KINDS:
            raise ValueError(f"kind must be one of {SESSION_KINDS}, got {kind!r}")
        if requested is None:
            return secrets.token_urlsafe(ts.SESSION_ID_ENTROPY_BYTES)
        if not ts.is_session_id(requested):
            raise ValueError(f"session ids have the minted format ({ts.SESSION_ID_LENGTH} URL-safe characters)")
        return requested

    @staticmethod
    def _meta_key(session_id: str) -> Key:
        # Every read and write of a session builds this key first: an id that cannot have been
        # minted is "not found" here, before any AWS call (no key of client-chosen size).
        if not ts.is_session_id(session_id):
            raise SessionNotFound(str(session_id)[:64])
        return {ts.PK: {"S": ts.session_pk(session_id)}, ts.SK: {"S": ts.METADATA_SK}}

    @staticmethod
    def _marker_key(session_id: str, tool_call_id: str) -> Key:
        if not ts.is_session_id(session_id):
            raise SessionNotFound(str(session_id)[:64])
        return {ts.PK: {"S": ts.session_pk(session_id)}, ts.SK: {"S": ts.tool_call_marker_sk(tool_call_id)}}

    def _alive(self, owner: str | None = None) -> Expression:
        names = {"#pk": ts.PK, "#ttl": ts.TTL, "#st": ts.STATUS}
        values = {":now": to_attr(self._now()), ":active": to_attr(ts.STATUS_ACTIVE)}
        expression = ALIVE
        if owner is not None:
            expression += " AND #owner = :owner"
            names["#owner"] = ts.OWNER
            values[":owner"] = to_attr(owner)
        return expression, names, values

    def _context_growth(self, session_id: str, entries: list[Any]) -> Expression:
        """SET clause, condition and placeholders that append ``entries`` to the context within
        its byte budget (D3: no read; the condition makes the budget exact under parallel calls)."""
        new = to_attr(entries)
        size = attr_size(new)
        if size > self.context_budget_bytes:
            raise SessionCapacityExceeded(session_id, "context", self.context_budget_bytes, size)
        clause = "#ctx = list_append(if_not_exists(#ctx, :empty), :new), #cb = if_not_exists(#cb, :zero) + :cbytes"
        names = {"#ctx": ts.CONTEXT, "#cb": ts.CONTEXT_BYTES}
        values = {
            ":new": new,
            ":empty": {"L": []},
            ":zero": to_attr(0),
            ":cbytes": to_attr(size),
            ":room": to_attr(self.context_budget_bytes - size),
        }
        return clause, names, values

    # -- visibility (D6, auth) ---------------------------------------------------------------
    def _read_item(self, session_id: str, *, consistent: bool) -> dict[str, AttributeValue] | None:
        response = self.gateway.call(
            "get_item", TableName=self.table_name, Key=self._meta_key(session_id), ConsistentRead=consistent
        )
        item: dict[str, AttributeValue] | None = response.get("Item")
        return item

    def get_session(self, session_id: str, *, owner: str | None = None, consistent: bool) -> Session:
        """One GetItem. ``consistent=False`` may be served by DAX: the owner never changes and
        the ttl only grows while alive, so a cached *live* answer is safe; a cached "missing"
        or "expired" answer may be stale, so it is confirmed with one consistent read (X4)."""
        item = self._read_item(session_id, consistent=consistent)
        if not consistent and not self._cached_alive(item):
            item = self._read_item(session_id, consistent=True)
        return self._visible(session_id, item, owner)

    def _cached_alive(self, item: dict[str, Any] | None) -> bool:
        if item is None:
            return False
        ttl = int(from_attr(item.get(ts.TTL, {"N": "0"})))
        return ttl > self.clock.now() or from_attr(item.get(ts.STATUS, {"S": ""})) == ts.STATUS_ENDED

    def _visible(self, session_id: str, item: dict[str, AttributeValue] | None, owner: str | None) -> Session:
        """The session if the caller may see it now, else the matching SessionNotFound."""
        if item is None:
            raise SessionNotFound(session_id)
        session = Session.from_item(item)
        if owner is not None and session.owner != owner:
            raise SessionNotFound(session_id)  # same error as missing: no existence oracle
        if session.status != ts.STATUS_ACTIVE:
            raise SessionEnded(session_id)
        if session.ttl <= self.clock.now():
            raise SessionExpired(session_id)  # D6: whatever DynamoDB has or hasn't deleted yet
        return session

    def _raise_not_alive(self, session_id: str, item: dict[str, AttributeValue] | None, owner: str | None) -> NoReturn:
        """After a failed alive condition: raise the precise not-found error for ``item``."""
        self._visible(session_id, item, owner)
        raise SessionNotFound(session_id)  # alive when re-read: it did not exist at write time
