"""What change notifications need of storage: the notification log, the 2025 subscription sets
with their stream lease, and whether a session is still live. The DynamoDB adapters implement
them (``adapters.dynamodb.notification_log``, ``adapters.dynamodb.subscriptions``) and
translate the SDK's errors into :class:`NotificationStoreError` (a throttle stays
``StoreThrottled``), so a stream's poll that fails is retried, whatever the table said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from mcp_platform.application.sessions.errors import SessionStoreError
from mcp_platform.application.stored_form import check_text
from mcp_platform.protocol.clock import Clock
from mcp_platform.protocol.jsonrpc import JSONObject, notification_message

LIST_KINDS = ("tools", "prompts", "resources")
RESOURCE = "resource"
MAX_URI_CHARS = 2048


class NotificationStoreError(SessionStoreError):
    """The log or a subscription set could not be read or written (the table answered an
    error, or was not reached)."""


class TooManySubscriptions(ValueError):
    def __init__(self, limit: int) -> None:
        super().__init__(f"a session may watch at most {limit} resources")
        self.limit = limit


def check_uri(uri: object) -> str:
    """A URI as a subscription keeps it: a non-empty, well-formed string, bounded."""
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_CHARS:
        raise ValueError(f"a resource URI must be a non-empty string of at most {MAX_URI_CHARS} characters")
    check_text(uri, "")  # an Inadmissible is a ValueError
    return uri


@dataclass(frozen=True, slots=True)
class Notice:
    """One log entry: what changed (``resource`` + its URI, or a list kind) and when (``sk``:
    the entry's cursor, which sorts in time order)."""

    sk: str
    notice: str
    uri: str = ""

    def message(self, meta: JSONObject | None = None) -> JSONObject:
        """The JSON-RPC notification a stream sends for it (``meta``: the 2026 subscription id)."""
        params: JSONObject = {"uri": self.uri} if self.notice == RESOURCE else {}
        if meta:
            params["_meta"] = meta
        method = (
            "notifications/resources/updated"
            if self.notice == RESOURCE
            else f"notifications/{self.notice}/list_changed"
        )
        return notification_message(method, params)


@dataclass(frozen=True)
class Snapshot:
    """A session's subscriptions (URI -> when it was made) and its stream lease."""

    since: dict[str, float] = field(default_factory=dict)
    holder: str | None = None
    renew: tuple[str, ...] = ()
    """URIs whose ttl is past half its life (renewed when a stream opens)."""


class NoticeLog(Protocol):
    """The notification log: entries per topic, each with a cursor (its sk) that sorts in time
    order; a reader asks for the entries after a cursor."""

    clock: Clock

    @property
    def lists_topic(self) -> str:
        """The topic of every list change."""
        ...

    def resource_topic(self, uri: str, audience: str) -> str:
        """The topic of ``uri``'s updates for ``audience`` ("" every subscriber, else a principal)."""
        ...

    def publish_resource_updated(self, uri: str, *, audience: str) -> Notice: ...

    def publish_list_changed(self, kind: str) -> Notice: ...

    def cursor(self, epoch_seconds: float) -> str:
        """The lower bound for "entries written after this time"."""
        ...

    def oldest_cursor(self) -> str:
        """Nothing older than the retention is guaranteed to be there: resume no earlier."""
        ...

    def is_cursor(self, value: object) -> bool:
        """Whether ``value`` is a cursor this log wrote (a 2025 ``Last-Event-ID`` is one)."""
        ...

    def read(self, topic: str, after: str) -> list[Notice]:
        """Entries of ``topic`` past ``after``, oldest first (a bounded number per call)."""
        ...


class SubscriptionStore(Protocol):
    """2025 ``resources/subscribe``: what a transport session watches, and which one stream delivers it."""

    max_per_session: int

    def subscribe(self, session_id: str, uri: str, *, owner: str) -> None:
        """Raises :class:`TooManySubscriptions` past ``max_per_session``."""
        ...

    def unsubscribe(self, session_id: str, uri: str) -> None: ...

    def snapshot(self, session_id: str, *, owner: str) -> Snapshot: ...

    def renew(self, session_id: str, snapshot: Snapshot, *, owner: str) -> None: ...

    def claim_stream(self, session_id: str, holder: str, *, owner: str, seconds: float) -> None: ...

    def release_stream(self, session_id: str, holder: str) -> None: ...

    def end(self, session_id: str) -> int: ...


class SessionLiveness(Protocol):
    def alive(self, session_id: str, owner: str) -> bool:
        """Whether ``owner``'s session is still live, read consistently (ended elsewhere?)."""
        ...
