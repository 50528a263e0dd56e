"""Typed errors of the session store: each maps to one precise MCP/HTTP outcome.

``SessionNotFound`` (and its subclasses) is deliberately the same error for "missing",
"expired", "ended" and "owned by another principal": callers answer all of them identically
(404) so the store is no existence oracle. The subclasses only help logging and metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp_platform.application.sessions.model import STATUS_ACTIVE, Session, ToolCallResult


class SessionStoreError(Exception):
    """Base class of every error the store raises on purpose."""


class SessionNotFound(SessionStoreError):
    """No live session with this id is visible to the caller (missing, foreign, expired, ended)."""

    def __init__(self, session_id: str, detail: str = "not found") -> None:
        super().__init__(f"session {session_id!r}: {detail}")
        self.session_id = session_id


class SessionExpired(SessionNotFound):
    """The session's ttl is in the past (D6/D7), whether or not DynamoDB has deleted it yet."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id, "expired")


class SessionEnded(SessionNotFound):
    """The session was ended explicitly."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id, "ended")


class SessionAlreadyExists(SessionStoreError):
    """create_session was given an id that is taken."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} already exists")
        self.session_id = session_id


class InvalidTtl(SessionStoreError, ValueError):
    """A ttl that is not epoch seconds (D5), e.g. a millisecond value; refused before writing."""

    def __init__(self, value: object) -> None:
        super().__init__(f"ttl must be epoch seconds (an int below 10^10), got {value!r}")
        self.value = value


class VersionConflict(SessionStoreError):
    """Optimistic lock lost (D2) after the retry policy; ``current`` is the latest state seen,
    ``attributes`` the attributes that changed when the commit was conditioned on them."""

    def __init__(
        self, session_id: str, expected: int, current: Session | None, *, attributes: Sequence[str] = ()
    ) -> None:
        actual = current.version if current is not None else None
        if attributes:  # a commit conditioned attribute by attribute: these changed meanwhile
            super().__init__(f"session {session_id!r}: attributes {sorted(attributes)} changed since they were read")
        else:
            super().__init__(f"session {session_id!r}: expected version {expected}, found {actual}")
        self.session_id = session_id
        self.expected = expected
        self.current = current
        self.attributes = tuple(attributes)


class DuplicateToolCall(SessionStoreError):
    """The same request was already committed under this tool call id (D4); ``original`` is the
    stored result. A different request under the id is :class:`IdempotencyKeyReused` instead."""

    def __init__(self, original: ToolCallResult) -> None:
        super().__init__(f"tool call {original.tool_call_id!r} was already committed")
        self.original = original


@dataclass(frozen=True)
class CancellationReason:
    """One entry of a TransactionCanceledException's CancellationReasons, normalised."""

    index: int
    code: str
    message: str = ""
    item: dict[str, Any] | None = None


class PreconditionFailed(SessionStoreError):
    """A tool's own condition (extra Put condition or ConditionCheck) failed (D10)."""

    def __init__(self, index: int, label: str, code: str, message: str = "") -> None:
        super().__init__(f"precondition {label!r} (transaction action {index}) failed: {code} {message}")
        self.index = index
        self.label = label
        self.code = code


class TransactionTooLarge(SessionStoreError, ValueError):
    """More than 100 actions or 4 MB in one TransactWriteItems; checked before sending (D10)."""

    def __init__(self, actions: int, size_bytes: int, max_actions: int, max_bytes: int) -> None:
        super().__init__(
            f"transaction of {actions} actions / ~{size_bytes} bytes exceeds {max_actions} actions / {max_bytes} bytes"
        )
        self.actions = actions
        self.size_bytes = size_bytes


class TransactionConflict(SessionStoreError):
    """TransactionConflict persisted through every retry (D10); safe to retry later."""

    def __init__(self, attempts: int) -> None:
        super().__init__(f"transaction conflicted on all {attempts} attempts")
        self.attempts = attempts


class TransactionFailed(SessionStoreError):
    """A transaction was cancelled for a reason other than a condition or a conflict."""

    def __init__(self, reasons: Sequence[CancellationReason]) -> None:
        super().__init__("transaction cancelled: " + ", ".join(f"[{r.index}] {r.code}" for r in reasons))
        self.reasons = tuple(reasons)


class IdempotencyKeyReused(SessionStoreError):
    """The tool call id is already committed for a *different* request (another tool or other
    arguments): a caller reused its idempotency key. Never answered with that request's result."""

    def __init__(self, tool_call_id: str) -> None:
        super().__init__(f"tool call id {tool_call_id!r} was already committed for a different request")
        self.tool_call_id = tool_call_id


class IdempotencyTokenReused(SessionStoreError):
    """DynamoDB saw this tool call id's ClientRequestToken with other parameters in the last
    10 minutes, and no marker of it exists in this session: the id is not unique."""

    def __init__(self, tool_call_id: str) -> None:
        super().__init__(f"tool call id {tool_call_id!r} was reused with different parameters")
        self.tool_call_id = tool_call_id


class ExpiryNotExtended(SessionStoreError):
    """A ttl-only write (sliding expiry, D7) failed for a reason other than its condition: the
    session is as it was; the next call past half its lifetime tries again."""


class StoreUnavailable(SessionStoreError):
    """DynamoDB failed (a 5xx) or could not be reached, through every retry of the SDK; safe to
    retry later. What the adapters make of every AWS failure that is not an answer."""


class StoreThrottled(StoreUnavailable):
    """DynamoDB kept throttling a request through every retry; safe to retry later."""


class SessionCapacityExceeded(SessionStoreError):
    """A write would take the session's context or attributes past their byte budget, which
    keeps the metadata item well inside DynamoDB's 400 KB item limit. Not retryable: the
    session is full; open a new one."""

    def __init__(self, session_id: str, what: str, budget_bytes: int, requested_bytes: int | None = None) -> None:
        detail = f"{what} budget of {budget_bytes} bytes is used up"
        if requested_bytes is not None:
            detail += f" (this write needs {requested_bytes} bytes)"
        super().__init__(f"session {session_id!r}: {detail}")
        self.session_id = session_id
        self.what = what
        self.budget_bytes = budget_bytes


class InvalidCursor(SessionStoreError, ValueError):
    """A pagination cursor that this store did not issue."""


class CallRecordTooLarge(SessionStoreError):
    """A tool call's arguments and result together exceed the call-record budget; refused before
    anything is written. Not retryable: the same call would be as large again."""

    def __init__(self, tool_call_id: str, budget_bytes: int, requested_bytes: int) -> None:
        super().__init__(
            f"tool call {tool_call_id!r}: arguments and result take {requested_bytes} bytes as stored, "
            f"over the {budget_bytes}-byte call-record budget"
        )
        self.tool_call_id = tool_call_id
        self.budget_bytes = budget_bytes
        self.requested_bytes = requested_bytes


def require_alive(session: Session, now: float) -> None:
    """Raise the precise not-found error unless ``session.is_alive(now)`` (ended before expired)."""
    if session.status != STATUS_ACTIVE:
        raise SessionEnded(session.id)
    if session.ttl <= now:
        raise SessionExpired(session.id)  # D6: whatever the table has or hasn't deleted yet
