"""The per-process pieces behind the interactive API, each built on first use.

Built at start (``bootstrap``) from factories of the storage adapters, and imports nothing of
them: an endpoint whose tools never ask pays neither the imports nor the secret fetch. The 2026
side is the request-state vault (:mod:`.ports`, its adapter seals with the keys of
:mod:`.keys`); the 2025 side is :class:`~.outbound.ServerRequests` over the reply items.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from mcp_platform.application.blocking import IN_THREAD, Blocking

if TYPE_CHECKING:
    from mcp_platform.application.interactive.outbound import ServerRequests
    from mcp_platform.application.interactive.ports import ReplyStore, StateVault

DEFAULT_CLIENT_REQUEST_TIMEOUT_SECONDS = 300.0
"""2025: how long a call waits for the client's answer (the call's own time limit may be shorter)."""


class InteractiveServices:
    def __init__(
        self,
        *,
        vault: Callable[[], StateVault],
        replies: Callable[[], ReplyStore],
        client_request_timeout_seconds: float = DEFAULT_CLIENT_REQUEST_TIMEOUT_SECONDS,
        blocking: Blocking = IN_THREAD,
    ) -> None:
        self.blocking = blocking
        """How the vault's and the reply store's blocking calls run (the root's strategy)."""
        self._vault = vault
        """Builds the vault; raises StateKeysMissing when no request-state secret is configured."""
        self._replies = replies
        self.client_request_timeout_seconds = client_request_timeout_seconds

    @cached_property
    def vault(self) -> StateVault:
        """2026-07-28: seals, opens and consumes ``requestState`` (the key is fetched on first use)."""
        return self._vault()

    @cached_property
    def outbound(self) -> ServerRequests:
        """2025 revisions: server-to-client requests on a call's stream, answers via the table."""
        from mcp_platform.application.interactive.outbound import ServerRequests

        return ServerRequests(
            self._replies(), timeout_seconds=self.client_request_timeout_seconds, blocking=self.blocking
        )
