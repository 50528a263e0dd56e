"""The naive notification log the cross-instance tests are shown to catch (their control)."""

from __future__ import annotations

from typing import Any

from mcp_platform.adapters.dynamodb.notification_log import Notice, NotificationLog
from mcp_platform.protocol.clock import iso_utc


class InMemoryLog(NotificationLog):
    """The naive version: each instance keeps the entries it published in its own memory."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.entries: dict[str, list[Notice]] = {}

    def _publish(self, topic: str, notice: str, uri: str) -> Notice:
        count = sum(len(entries) for entries in self.entries.values())
        entry = Notice(f"{iso_utc(self.clock.now())}#{count:08x}", notice, uri)
        self.entries.setdefault(topic, []).append(entry)
        return entry

    def read(self, topic: str, after: str) -> list[Notice]:
        return [entry for entry in self.entries.get(topic, []) if entry.sk > after]
