"""Change notifications across instances (stack option ``subscriptions``).

On Lambda the request that changes something (a tool call) and the stream that must announce it
(a 2025 GET stream, a 2026 ``subscriptions/listen`` stream) run in different execution
environments, so nothing is handed over in memory: the change is an entry in a notification log
in the session table (:mod:`.log`), 2025 subscriptions are items of the transport session
(:mod:`.subscriptions`), and whichever instance holds a stream polls the log (:mod:`.reader`).
:class:`Notifications` is what tools publish through (``ctx.notify_resource_updated``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from mcp_platform.notifications.log import LIST_KINDS, Notice, NotificationLog
from mcp_platform.notifications.subscriptions import SessionSubscriptions


@dataclass(frozen=True)
class Notifications:
    """The publisher API and the two stores a stream reads; one per process."""

    log: NotificationLog
    subscriptions: SessionSubscriptions

    async def resource_updated(self, uri: str) -> Notice:
        """Announce that ``uri`` changed: one PutItem; every subscriber's stream delivers it."""
        return await asyncio.to_thread(self.log.publish_resource_updated, uri)

    async def list_changed(self, kind: str) -> Notice:
        """Announce that the list of ``kind`` (tools, prompts or resources) changed."""
        return await asyncio.to_thread(self.log.publish_list_changed, kind)


__all__ = ["LIST_KINDS", "Notice", "NotificationLog", "Notifications", "SessionSubscriptions"]
