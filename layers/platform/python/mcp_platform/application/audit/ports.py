"""What the audit use cases need from outside (A2-A5), implemented by the adapters.

The stream's item images and the codec that reads them are :mod:`.images`. Errors a port raises
live here too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mcp_platform.application.audit.diff import ImageDiff
    from mcp_platform.application.audit.records import StreamChange


class CleanupIncomplete(RuntimeError):
    """Some held items stayed unprocessed after every retry; the record must be redelivered."""


@dataclass(frozen=True, slots=True)
class HeldItems:
    """What an expired session still holds: its tool-call records and idempotency markers."""

    keys: tuple[str, ...]
    """Opaque to the use case: handed back to :meth:`SessionRemains.delete`."""
    tool_call_starts: tuple[str, ...]
    """Start time (ISO 8601) of each recorded tool call, read from its key (no item read)."""


class SessionRemains(Protocol):
    """The session table's side of an expiry: what the session held, and its removal."""

    def held(self, session_id: str) -> HeldItems:
        """Read consistently: what is left to revoke must not come from a stale view."""
        ...

    def delete(self, session_id: str, keys: Sequence[str]) -> int:
        """Delete the held items (deleting a deleted one is a no-op): how many were asked for.
        Raises :class:`CleanupIncomplete` when some stay unprocessed after every retry."""
        ...


class EventPublisher(Protocol):
    """Where "session expired" events go; must raise if the event could not be delivered."""

    def publish(self, event: Mapping[str, Any]) -> None: ...


class AuditLog(Protocol):
    """The audit table: one record per session change, and one summary per expired session."""

    def record(self, change: StreamChange, diff: Callable[[], ImageDiff]) -> bool:
        """Store the change's audit record: True if written, False if it was already (a
        redelivered stream record is a silent success, A2). ``diff`` computes the change's
        field-level diff (A3): the log calls it only when it stores the diff, not when the diff
        can be recomputed from the images it stores."""
        ...

    def put_summary(
        self, session_id: str, summary: Mapping[str, Any], change_epoch: float
    ) -> tuple[dict[str, Any], bool]:
        """Write the session summary once (A4): (the stored summary, whether this call wrote it).
        The first write wins; a redelivery gets the stored one back, with ``event_published``."""
        ...

    def get_summary(self, session_id: str) -> dict[str, Any] | None: ...

    def mark_event_published(self, session_id: str, published_at_iso: str) -> None: ...
