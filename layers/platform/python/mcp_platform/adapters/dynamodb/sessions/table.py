"""What every part of the store shares: the table, its gateway and clock, the budgets, the
"alive" condition and the visibility rules (who may see which session, when)."""

from __future__ import annotations

import math
import secrets
from typing import Any, NoReturn

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import AttributeValue, from_attr, require_epoch_seconds, to_attr
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.adapters.dynamodb.sessions.items import meta_key, session_from_item
from mcp_platform.application.sessions.commit_plan import (
    CALL_RECORD_BUDGET_BYTES,
    DEFAULT_CONTEXT_BUDGET_BYTES,
    Budgets,
    context_growth,
)
from mcp_platform.application.sessions.errors import SessionNotFound, require_alive
from mcp_platform.application.sessions.model import SESSION_KINDS, STATUS_ACTIVE, STATUS_ENDED, Session
from mcp_platform.application.sessions.retry import Backoff
from mcp_platform.protocol.clock import Clock, iso_utc

Expression = tuple[str, dict[str, str], dict[str, AttributeValue]]

# D7/D10 "session alive" as a condition: the item exists, and ``Session.is_alive`` holds of it
# (the status is :data:`STATUS_ACTIVE`, bound as ``:active``; the ttl is after ``:now``).
ALIVE = "attribute_exists(#pk) AND #ttl > :now AND #st = :active"
# The context's byte budget (DEFAULT_CONTEXT_BUDGET_BYTES, why that size: commit_plan) holds
# atomically: the write that grows the context is conditioned on the size stored before it.
CONTEXT_HAS_ROOM = "(attribute_not_exists(#cb) OR #cb <= :room)"


def context_clause(new: AttributeValue, size: int, room: int) -> Expression:
    """SET clause and placeholders that append the list ``new`` (``size`` bytes) to the context
    and count it in ``context_bytes``; ``:room`` is what CONTEXT_HAS_ROOM compares the stored
    size with (D3: no read, the condition makes the budget exact under parallel calls)."""
    clause = "#ctx = list_append(if_not_exists(#ctx, :empty), :new), #cb = if_not_exists(#cb, :zero) + :cbytes"
    names = {"#ctx": ts.CONTEXT, "#cb": ts.CONTEXT_BYTES}
    values = {":new": new, ":empty": {"L": []}, ":zero": to_attr(0), ":cbytes": to_attr(size), ":room": to_attr(room)}
    return clause, names, values


def alive_condition(now: int, owner: str | None = None) -> Expression:
    """The "alive" condition of a session's metadata item at ``now`` (and, given ``owner``,
    "owned by"), with its placeholders: what every write that needs a live session carries."""
    names = {"#pk": ts.PK, "#ttl": ts.TTL, "#st": ts.STATUS}
    values = {":now": to_attr(now), ":active": to_attr(STATUS_ACTIVE)}
    expression = ALIVE
    if owner is not None:
        expression += " AND #owner = :owner"
        names["#owner"] = ts.OWNER
        values[":owner"] = to_attr(owner)
    return expression, names, values


class SessionTable:
    """The session table as the store's parts use it. Mutable settings (``conflict_backoff``,
    ``context_budget_bytes``) are read on every use, so a test may change them on a live store."""

    def __init__(
        self,
        table_name: str,
        gateway: DynamoGateway,
        *,
        ttl_seconds: int,
        clock: Clock,
        backoff: Backoff,
        conflict_backoff: Backoff,
        context_budget_bytes: int = DEFAULT_CONTEXT_BUDGET_BYTES,
        record_budget_bytes: int = CALL_RECORD_BUDGET_BYTES,
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError(f"ttl_seconds must be positive, got {ttl_seconds}")
        self.table_name = table_name
        self.gateway = gateway
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self.backoff = backoff
        self.conflict_backoff = conflict_backoff
        self.context_budget_bytes = context_budget_bytes
        self.record_budget_bytes = record_budget_bytes

    # -- time ------------------------------------------------------------------------------
    def now(self) -> int:
        """Whole epoch seconds, floored: ``ttl > now`` then agrees with ``ttl <= now`` (D6)."""
        return math.floor(self.clock.now())

    def iso_now(self) -> str:
        return iso_utc(self.clock.now())

    def next_ttl(self, seconds: int | None = None, *, now: float | None = None) -> int:
        start = self.now() if now is None else math.floor(now)
        return require_epoch_seconds(start + (self.ttl_seconds if seconds is None else seconds))

    @property
    def budgets(self) -> Budgets:
        return Budgets(context_bytes=self.context_budget_bytes, record_bytes=self.record_budget_bytes)

    # -- ids and conditions ----------------------------------------------------------------
    @staticmethod
    def new_session_id(owner: str, kind: str, requested: str | None) -> str:
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

    def alive(self, owner: str | None = None) -> Expression:
        """The "alive" condition at this store's time (and, given ``owner``, "owned by")."""
        return alive_condition(self.now(), owner)

    def context_growth(self, session_id: str, entries: list[Any]) -> Expression:
        """SET clause, condition and placeholders that append ``entries`` to the context within
        its byte budget (``commit_plan.context_growth``: the same rule as a commit's)."""
        size, room = context_growth(session_id, entries, self.context_budget_bytes)
        return context_clause(to_attr(entries), size, room)

    # -- visibility (D6, auth) ---------------------------------------------------------------
    def read_item(self, session_id: str, *, consistent: bool) -> dict[str, AttributeValue] | None:
        response = self.gateway.call(
            "get_item", TableName=self.table_name, Key=meta_key(session_id), ConsistentRead=consistent
        )
        item: dict[str, AttributeValue] | None = response.get("Item")
        return item

    def get_session(self, session_id: str, *, owner: str | None = None, consistent: bool) -> Session:
        """One GetItem. ``consistent=False`` may be served by DAX: the owner never changes and
        the ttl only grows while alive, so a cached *live* answer is safe; a cached "missing"
        or "expired" answer may be stale, so it is confirmed with one consistent read (X4)."""
        item = self.read_item(session_id, consistent=consistent)
        if not consistent and not self.cached_alive(item):
            item = self.read_item(session_id, consistent=True)
        return self.visible(session_id, item, owner)

    def cached_alive(self, item: dict[str, Any] | None) -> bool:
        """Whether a cached item may be answered without a consistent read: a live one, or an
        ended one (an ended session never comes back)."""
        if item is None:
            return False
        ttl = int(from_attr(item.get(ts.TTL, {"N": "0"})))
        return ttl > self.clock.now() or from_attr(item.get(ts.STATUS, {"S": ""})) == STATUS_ENDED

    def visible(self, session_id: str, item: dict[str, AttributeValue] | None, owner: str | None) -> Session:
        """The session if the caller may see it now, else the matching SessionNotFound."""
        if item is None:
            raise SessionNotFound(session_id)
        session = session_from_item(item)
        if owner is not None and session.owner != owner:
            raise SessionNotFound(session_id)  # same error as missing: no existence oracle
        require_alive(session, self.clock.now())
        return session

    def raise_not_alive(self, session_id: str, item: dict[str, AttributeValue] | None, owner: str | None) -> NoReturn:
        """After a failed alive condition: raise the precise not-found error for ``item``."""
        self.visible(session_id, item, owner)
        raise SessionNotFound(session_id)  # alive when re-read: it did not exist at write time
