"""What every part of the store shares: the table, its gateway and clock, the budgets, the
"alive" condition and the visibility rules (who may see which session, when)."""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, NoReturn

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import (
    AttributeValue,
    Item,
    from_attr,
    require_epoch_seconds,
    to_attr,
    to_item,
)
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
from mcp_platform.config import CONTEXT_IN_ITEMS, CONTEXT_IN_LIST
from mcp_platform.protocol.clock import Clock, iso_utc

Expression = tuple[str, dict[str, str], dict[str, AttributeValue]]

# D7/D10 "session alive" as a condition: the item exists, and ``Session.is_alive`` holds of it
# (the status is :data:`STATUS_ACTIVE`, bound as ``:active``; the ttl is after ``:now``).
ALIVE = "attribute_exists(#pk) AND #ttl > :now AND #st = :active"
# The context's byte budget (DEFAULT_CONTEXT_BUDGET_BYTES, why that size: commit_plan) holds
# atomically: the write that grows the context is conditioned on the size stored before it.
CONTEXT_HAS_ROOM = "(attribute_not_exists(#cb) OR #cb <= :room)"


def context_clause(size: int, room: int, *, listed: AttributeValue | None = None) -> Expression:
    """SET clause and placeholders that count ``size`` more bytes of context in the metadata
    (``context_bytes``) and either one more context item (``context_items``; the entries go in a
    context item, :func:`context_item`, so the metadata never grows with the context) or, given
    ``listed``, those entries appended to the metadata's own list (the list layout of ``config``). ``:room``
    is what CONTEXT_HAS_ROOM compares the stored size with (D3: no read, the condition makes the
    budget exact under parallel calls)."""
    names = {"#cb": ts.CONTEXT_BYTES}
    values = {":zero": to_attr(0), ":cbytes": to_attr(size), ":room": to_attr(room)}
    counted = "#cb = if_not_exists(#cb, :zero) + :cbytes"
    if listed is None:
        names["#ci"] = ts.CONTEXT_ITEMS
        values[":citems"] = to_attr(1)
        return f"{counted}, #ci = if_not_exists(#ci, :zero) + :citems", names, values
    names["#ctx"] = ts.CONTEXT
    values.update({":new": listed, ":empty": {"L": []}})
    return f"#ctx = list_append(if_not_exists(#ctx, :empty), :new), {counted}", names, values


def context_item(session_id: str, sk: str, entries: Sequence[Any], extra: Mapping[str, Any] | None = None) -> Item:
    """A context item: ``entries`` appended by one write (D1/D3 as amended). No ttl of its own:
    the session's ttl slides with every call, so any ttl written here would remove the item
    while the session lives; like the session's tool-call records, it is deleted with what the
    session held when its metadata expires (A4, ``adapters.dynamodb.session_remains``)."""
    item = to_item({ts.PK: ts.session_pk(session_id), ts.SK: sk, **(extra or {})})
    item[ts.CONTEXT] = to_attr(list(entries))
    return item


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
        context_layout: str = CONTEXT_IN_ITEMS,
        event_as_text: bool = False,
    ) -> None:
        """``event_as_text``: a committed call's event is stored on its record whole, as its wire
        JSON (``config.committed_event_as_text``), not as what the record does not hold."""
        if ttl_seconds <= 0:
            raise ValueError(f"ttl_seconds must be positive, got {ttl_seconds}")
        if context_layout not in (CONTEXT_IN_ITEMS, CONTEXT_IN_LIST):
            raise ValueError(
                f"context_layout must be {CONTEXT_IN_ITEMS!r} or {CONTEXT_IN_LIST!r}, got {context_layout!r}"
            )
        self.table_name = table_name
        self.gateway = gateway
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self.backoff = backoff
        self.conflict_backoff = conflict_backoff
        self.context_budget_bytes = context_budget_bytes
        self.record_budget_bytes = record_budget_bytes
        self.context_layout = context_layout
        self.event_as_text = event_as_text

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
        """SET clause, condition placeholders that count ``entries`` in the context within its
        byte budget (``commit_plan.context_growth``: the same rule as a commit's), and, in the
        list layout, append them to the metadata's list."""
        size, room = context_growth(session_id, entries, self.context_budget_bytes)
        return context_clause(size, room, listed=self.listed(entries))

    def listed(self, entries: Sequence[Any]) -> AttributeValue | None:
        """The entries as the metadata's list takes them, in the list layout; None in the items layout."""
        return to_attr(list(entries)) if self.context_layout == CONTEXT_IN_LIST else None

    # -- the context (D1/D3 as amended) -----------------------------------------------------
    def with_context(self, session: Session, item: Mapping[str, AttributeValue], *, consistent: bool) -> Session:
        """``session`` (read from the metadata ``item``) with its whole context: the list an item
        from before the context items holds, then the entries of its context items, read with
        one Query (paged beyond 1 MB) only when the metadata counts some."""
        if not int(from_attr(item.get(ts.CONTEXT_ITEMS, {"N": "0"}))):
            return session
        return replace(session, context=[*session.context, *self.context_entries(session.id, consistent=consistent)])

    def context_entries(self, session_id: str, *, consistent: bool) -> list[Any]:
        """The entries of the session's context items, in the order of their keys."""
        params: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": ts.PK, "#sk": ts.SK, "#ctx": ts.CONTEXT},
            "ExpressionAttributeValues": {
                ":pk": to_attr(ts.session_pk(session_id)),
                ":prefix": to_attr(ts.CONTEXT_ITEM_PREFIX),
            },
            "ProjectionExpression": "#ctx",
            "ConsistentRead": consistent,
        }
        entries: list[Any] = []
        while True:
            response = self.gateway.call("query", **params)
            for found in response.get("Items", []):
                entries.extend(from_attr(found.get(ts.CONTEXT, {"L": []})))
            if "LastEvaluatedKey" not in response:
                return entries
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    # -- visibility (D6, auth) ---------------------------------------------------------------
    def read_item(self, session_id: str, *, consistent: bool) -> dict[str, AttributeValue] | None:
        response = self.gateway.call(
            "get_item", TableName=self.table_name, Key=meta_key(session_id), ConsistentRead=consistent
        )
        item: dict[str, AttributeValue] | None = response.get("Item")
        return item

    def get_session(
        self, session_id: str, *, owner: str | None = None, consistent: bool, with_context: bool = True
    ) -> Session:
        """One GetItem (and, ``with_context``, the Query of its context items when it has some).
        ``consistent=False`` may be served by DAX: the owner never changes and the ttl only
        grows while alive, so a cached *live* answer is safe; a cached "missing" or "expired"
        answer may be stale, so it is confirmed with one consistent read (X4)."""
        item = self.read_item(session_id, consistent=consistent)
        if not consistent and not self.cached_alive(item):
            item = self.read_item(session_id, consistent=True)
            consistent = True
        session = self.visible(session_id, item, owner)
        if with_context and item is not None:
            session = self.with_context(session, item, consistent=consistent)
        return session

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
