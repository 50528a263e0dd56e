"""Reading a session's audit trail back, a page at a time in change order (A3).

Supports the MCP tool ``session_audit``; the tool (not the reader) checks that the caller owns
the session. The cursor is opaque to callers and bound to the session it was issued for, so it
cannot be replayed against another session's partition. The reader is
:class:`mcp_platform.adapters.dynamodb.audit_trail.AuditTrail`, built by the composition root.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

DEFAULT_LIMIT = 50
MAX_LIMIT = 100


class InvalidCursor(ValueError):
    """The cursor was not issued for this session's trail."""


@dataclass(frozen=True, slots=True)
class TrailPage:
    records: list[dict[str, Any]] = field(default_factory=list)
    next_cursor: str | None = None


class AuditTrailReader(Protocol):
    def session_trail(self, session_id: str, *, limit: int = DEFAULT_LIMIT, cursor: str | None = None) -> TrailPage:
        """One page of the session's audit records, oldest first; ``next_cursor`` None at the end.
        ValueError for a limit outside 1..MAX_LIMIT, :class:`InvalidCursor` for a foreign cursor."""
        ...

    def session_summary(self, session_id: str) -> dict[str, Any] | None:
        """The summary written when the session expired by TTL, if it did."""
        ...
