"""What one open stream reads from the log on each poll (synchronous: a poll runs in a thread).

The cursor. Each topic is read with ``sk > bound``, where the bound trails the previous poll's
start by ``overlap_seconds`` (never before the stream's start): an entry is stamped with its
writer's clock before its PutItem commits, so it can land behind an sk a reader already passed.
Entries read twice inside the overlap are recognised by their sk and delivered once.

The order of reads inside a poll makes list changes barriers: the list topic is read first, then
the resources. So when a stream delivers a list change B, every entry published before B on a
topic the stream watches was committed before that first read, is read in the same poll (or an
earlier one) and, sorted by sk, delivered no later than B. Tests publish a list change as a
marker and judge what arrived before it, instead of relying on timing.

A 2025 session's set changes while its stream is open (subscribe and unsubscribe land anywhere),
so :class:`SessionSource` reads it in the same poll, *after* the known resources: updates read for
a URI that was unsubscribed meanwhile are dropped, and a URI subscribed meanwhile is read at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from mcp_platform.application.notifications.ports import RESOURCE, Notice, NoticeLog, SubscriptionStore

OVERLAP_SECONDS = 2.0


class LogReader:
    def __init__(self, log: NoticeLog, start: str, *, overlap_seconds: float = OVERLAP_SECONDS) -> None:
        self.log = log
        self.start = start
        self.overlap_seconds = overlap_seconds
        self._seen: set[str] = set()
        self._bound = start
        self._last_started: float | None = None  # the start of the last poll that delivered
        self._started = 0.0

    def begin(self) -> None:
        """A poll that fails before :meth:`finish` leaves the bound where it was: nothing is lost."""
        self._started = self.log.clock.now()
        if self._last_started is not None:
            self._bound = max(self.start, self.log.cursor(self._last_started - self.overlap_seconds))

    def read(self, topic: str, since: float | None = None) -> list[Notice]:
        """Entries of ``topic`` past the bound (and past ``since`` less the overlap), not yet delivered."""
        after = self._bound
        if since is not None:
            after = max(after, self.log.cursor(since - self.overlap_seconds))
        return [notice for notice in self.log.read(topic, after) if notice.sk not in self._seen]

    def finish(self, found: Iterable[Notice]) -> list[Notice]:
        """What the poll delivers, oldest first; remembered until the bound passes it."""
        delivered = sorted({notice.sk: notice for notice in found}.values(), key=lambda notice: notice.sk)
        self._seen = {sk for sk in self._seen if sk > self._bound} | {notice.sk for notice in delivered}
        self._last_started = self._started
        return delivered


@dataclass
class ListenSource:
    """2026 ``subscriptions/listen``: the topics are the request's filter, fixed for the stream."""

    reader: LogReader
    lists: frozenset[str]
    uris: tuple[str, ...]
    topic_of: Callable[[str], str]
    """A URI's topic for the listening principal (``Notifications.resource_topic``)."""

    def poll(self) -> list[Notice] | None:
        self.reader.begin()
        found = (
            [n for n in self.reader.read(self.reader.log.lists_topic) if n.notice in self.lists] if self.lists else []
        )
        for uri in self.uris:
            found += [n for n in self.reader.read(self.topic_of(uri)) if n.uri == uri]
        return self.reader.finish(found)


@dataclass
class SessionSource:
    """2025 GET stream of a transport session: its list changes and its subscriptions.

    ``None`` from :meth:`poll` ends the stream: another stream holds the lease (or DELETE
    removed it), or ``session_alive`` (checked every ``session_check_seconds``) said no."""

    reader: LogReader
    subscriptions: SubscriptionStore
    session_id: str
    owner: str
    holder: str
    lists: frozenset[str]
    session_alive: Callable[[], bool]
    now: Callable[[], float]
    """The stream's clock (monotonic), for the session check's interval."""
    topic_of: Callable[[str], str]
    """A URI's topic for the session's owner (``Notifications.resource_topic``)."""
    session_check_seconds: float = 60.0
    known: dict[str, float] = field(default_factory=dict)
    checked_at: float = 0.0
    """When the session was last seen alive (the stream's open checked it)."""

    def poll(self) -> list[Notice] | None:
        self.reader.begin()
        found = (
            [n for n in self.reader.read(self.reader.log.lists_topic) if n.notice in self.lists] if self.lists else []
        )
        for uri, since in self.known.items():
            found += self._updates(uri, since)
        snapshot = self.subscriptions.snapshot(self.session_id, owner=self.owner)
        if snapshot.holder != self.holder:
            return None
        for uri, since in snapshot.since.items():
            if uri not in self.known:
                found += self._updates(uri, since)
        self.known = dict(snapshot.since)
        now = self.now()
        if now - self.checked_at >= self.session_check_seconds:
            if not self.session_alive():
                return None
            self.checked_at = now
        return self.reader.finish(n for n in found if n.notice != RESOURCE or n.uri in self.known)

    def _updates(self, uri: str, since: float) -> list[Notice]:
        return [n for n in self.reader.read(self.topic_of(uri), since) if n.uri == uri]
