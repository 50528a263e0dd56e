"""The outbox relay (K10): every committed tool call's event reaches the stream, whoever died.

A commit writes the call's record and, on it, the call's event (the transactional outbox); the
instance then emits the same event itself, before its answer leaves. An instance that dies
between the two (SIGKILL, a timeout, out of memory, the stream cap) leaves the event in the table
only. The table's stream delivers every record INSERT to the audit function, which hands each
change here: an event ingest has not counted yet is emitted again, under its own id, and ingest
counts each id once. Ingest usually counts the instance's own emission first (its flush precedes
the answer; the table stream is read a few times a second), so a relay costs one read of the
dedupe marker and, only for the calls whose flush never happened, one more record on the stream.

A relayed event that Kinesis refuses raises: the stream record is retried, bisected and in the
end dead-lettered with the audit's other failures (A5); a redelivery relays again, harmlessly.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from mcp_platform.application.audit.records import StreamChange
from mcp_platform.application.events.schema import EventSchemaError, ToolCallEvent

logger = logging.getLogger(__name__)


class CountedEvents(Protocol):
    """Whether ingest has counted an event: its dedupe marker exists."""

    def counted(self, event_id: str) -> bool: ...


class EventPublisher(Protocol):
    """Puts one event on the stream, or raises (the audit's publisher)."""

    def publish(self, event: Mapping[str, Any]) -> None: ...


class CommittedEventRelay:
    def __init__(self, counted: CountedEvents, publisher: EventPublisher) -> None:
        self._counted = counted
        self._publisher = publisher

    def relay(self, change: StreamChange) -> bool:
        """Emits the change's committed event unless ingest counted it: True when emitted."""
        if change.committed_event is None:
            return False
        try:
            event = ToolCallEvent.from_bytes(change.committed_event)
        except EventSchemaError:
            # Written by the commit from typed values: unreadable means a newer writer; logged,
            # and the record stays audited (the instance's own emission is the one to count).
            logger.exception("committed event of record %s is unreadable; not relayed", change.sk)
            return False
        if self._counted.counted(event.event_id):
            return False
        self._publisher.publish(event.to_dict())
        logger.info("relayed committed event %s: ingest had not counted it", event.event_id)
        return True
