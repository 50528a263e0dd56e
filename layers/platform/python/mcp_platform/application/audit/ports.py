"""What the audit use cases need from outside (A2-A5), implemented by the adapters.

The stream's item images arrive in the store's wire form and stay in it: the diff compares them
without converting (equal wire values are equal items) and the audit log stores them verbatim.
The use case reads them only through an :class:`ImageCodec`, so it never knows the wire format;
:mod:`mcp_platform.adapters.dynamodb.stream_images` is the DynamoDB JSON one. Errors a port raises
live here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mcp_platform.application.audit.diff import ImageDiff
    from mcp_platform.application.audit.records import StreamChange

WireValue = Mapping[str, Any]
"""One attribute value of an item image, as the stream delivered it (opaque to the use case)."""
WireImage = Mapping[str, WireValue]
"""An item image: attribute name -> wire value."""


class ImageCodec(Protocol):
    """Reading wire values: decoding, list structure and type, and which lists grow unbounded."""

    @property
    def summarised_lists(self) -> frozenset[str]:
        """Attributes whose list changes are summarised (appends counted), never copied whole."""
        ...

    def to_plain(self, value: WireValue) -> Any:
        """The value as Python (numbers as Decimal, sets as sets; binary is bytes-convertible)."""
        ...

    def list_items(self, value: WireValue) -> Sequence[WireValue] | None:
        """The items of a list value; None when the value is not a list."""
        ...

    def kind(self, value: WireValue) -> str:
        """A short name of the value's type, kept in summaries of values too large to copy."""
        ...


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

    def record(self, change: StreamChange, diff: ImageDiff) -> bool:
        """Store the change's audit record: True if written, False if it was already (a
        redelivered stream record is a silent success, A2)."""
        ...

    def put_summary(
        self, session_id: str, summary: Mapping[str, Any], change_epoch: float
    ) -> tuple[dict[str, Any], bool]:
        """Write the session summary once (A4): (the stored summary, whether this call wrote it).
        The first write wins; a redelivery gets the stored one back, with ``event_published``."""
        ...

    def get_summary(self, session_id: str) -> dict[str, Any] | None: ...

    def mark_event_published(self, session_id: str, published_at_iso: str) -> None: ...
