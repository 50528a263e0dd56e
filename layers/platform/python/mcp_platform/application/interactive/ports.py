"""What the interactive use cases need of storage: the request-state vault (2026-07-28 rounds)
and the reply items (2025 server-to-client requests). The DynamoDB adapters implement them
(``adapters.dynamodb.request_state_vault``, ``adapters.dynamodb.replies``) and translate the
SDK's errors into :class:`InteractiveStoreError` (a throttle stays ``StoreThrottled``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from mcp_platform.application.sessions.errors import SessionStoreError

if TYPE_CHECKING:
    from mcp_platform.application.interactive.state import Binding, RoundState


class StateKeysMissing(RuntimeError):
    """No request-state key is configured: 2026 rounds cannot be served (a deployment fault)."""


class InteractiveStoreError(SessionStoreError):
    """A reply item or a used-state nonce could not be written or read (the table answered an
    error, or was not reached)."""


class StateVault(Protocol):
    """Seals, opens and consumes ``requestState``, for every instance alike. ``seal`` and
    ``open`` may read the key secret, ``consume`` writes: call them off the event loop."""

    def new_state(self, answers: dict[str, dict[str, Any]], pending: dict[str, str], round_: int) -> RoundState: ...

    def seal(self, binding: Binding, state: RoundState) -> str:
        """The token; raises ValueError when the state is too large, KeyRingError without a key."""
        ...

    def open(self, token: str, binding: Binding) -> RoundState:
        """The verified state; raises InvalidRequestState (or KeyRingError)."""
        ...

    def consume(self, state: RoundState) -> None:
        """Use the state up (once, across instances); raises StateAlreadyUsed the second time."""
        ...


class ReplyStore(Protocol):
    """Reply items: a 2025 server-to-client request and the client's answer, whichever instance
    receives it. Raises :class:`InteractiveStoreError` (or ``StoreThrottled``) when the table fails."""

    def expect(self, session_id: str, request_id: str, *, owner: str, method: str, ttl_seconds: int) -> None:
        """Before the request leaves: its item exists, so no answer can precede it."""
        ...

    def deliver(self, session_id: str, request_id: str | int, *, owner: str, response: str) -> bool:
        """The answer into its item; False: no such outstanding request for ``owner``."""
        ...

    def read(self, session_id: str, request_id: str, *, owner: str) -> str | None:
        """The answer delivered so far (a consistent read), else None."""
        ...

    def discard(self, session_id: str, request_id: str) -> None: ...
