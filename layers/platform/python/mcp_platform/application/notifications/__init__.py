"""Change notifications across instances (stack option ``subscriptions``).

On Lambda the request that changes something (a tool call) and the stream that must announce it
(a 2025 GET stream, a 2026 ``subscriptions/listen`` stream) run in different execution
environments, so nothing is handed over in memory: the change is an entry in a notification log
(the ``NoticeLog`` of :mod:`.ports`), 2025 subscriptions are kept with the transport session
(its ``SubscriptionStore``), and whichever instance holds a stream polls the log (:mod:`.reader`).
:class:`Notifications` is what tools publish through (``ctx.notify_resource_updated``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mcp_platform.application.blocking import IN_THREAD, Blocking
from mcp_platform.application.notifications.ports import LIST_KINDS, Notice, NoticeLog, SubscriptionStore

Audience = Callable[[str, str], str]
"""(uri, principal) -> whose streams hear of an update of ``uri`` that ``principal`` announces
or listens for: "" (every subscriber) or that principal only (``NoticeLog.resource_topic``)."""


def each_principal_alone(uri: str, principal: str) -> str:
    """The safe default: every resource may read differently per caller."""
    return principal


@dataclass(frozen=True)
class Notifications:
    """The publisher API and the two stores a stream reads; one per process."""

    log: NoticeLog
    subscriptions: SubscriptionStore
    audience: Audience = each_principal_alone
    """The endpoint's: by the resource's declared cache scope (``mcp.subscribe.audience``)."""
    blocking: Blocking = IN_THREAD
    """How the stores' blocking calls run (the root's strategy): publishing, subscribing, polling."""

    async def resource_updated(self, uri: str, *, principal: str) -> Notice:
        """Announce that ``uri`` changed, as ``principal``: one PutItem; every stream that
        subscribed to it and may hear of it (:attr:`audience`) delivers it."""
        audience = self.audience(uri, principal)
        return await self.blocking(self.log.publish_resource_updated, uri, audience=audience)

    def resource_topic(self, uri: str, principal: str) -> str:
        """The log topic a stream of ``principal`` reads for ``uri``."""
        return self.log.resource_topic(uri, self.audience(uri, principal))

    async def list_changed(self, kind: str) -> Notice:
        """Announce that the list of ``kind`` (tools, prompts or resources) changed."""
        return await self.blocking(self.log.publish_list_changed, kind)


__all__ = ["LIST_KINDS", "Audience", "Notice", "NoticeLog", "Notifications", "SubscriptionStore"]
