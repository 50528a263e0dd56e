"""Interactive tools: a call (or a prompt, or a resource read) asks its client for input.

One API for both protocol eras (:mod:`.api`, behind ``ToolContext``'s ``elicit``, ``sample``,
``list_roots`` and ``ask_all``). How the question travels depends on the request:

* 2026-07-28 (:mod:`.rounds`): the request is answered with an ``InputRequiredResult``; the
  client retries with ``inputResponses`` and the echoed ``requestState``, which any instance
  verifies (:mod:`.state`, keys from :mod:`.keys`) and consumes once (:mod:`.vault`).
* 2025 revisions (:mod:`.outbound`): a JSON-RPC request on the call's SSE stream; the client's
  response POST reaches whichever instance and is delivered through the table (:mod:`.replies`).

:class:`InteractiveServices` is built at start but imports nothing of that: each side is loaded
on first use, so an endpoint whose tools never ask pays neither the imports nor the secret fetch.
This module, loaded at start, holds only that and what the server's dispatch must recognise.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_platform.adapters.dynamodb.request_state_vault import RequestStateVault
    from mcp_platform.application.interactive.outbound import ServerRequests
    from mcp_platform.protocol.interactive import InputRequest

INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
"""2026-07-28: the requests that may answer InputRequiredResult (mrtr.mdx, "Supported Requests")."""


class InputRequired(Exception):
    """2026-07-28: the run needs answers the request does not carry; the server answers an
    InputRequiredResult asking ``requests``. Never committed, never cached."""

    def __init__(self, requests: Mapping[str, InputRequest]) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = dict(requests)


DEFAULT_CLIENT_REQUEST_TIMEOUT_SECONDS = 300.0
"""2025: how long a call waits for the client's answer (the call's own time limit may be shorter)."""


class InteractiveServices:
    """The per-process pieces behind the interactive API, each built on first use."""

    def __init__(
        self,
        table_name: str,
        gateway: Any,
        clock: Any,
        *,
        secret_id: str,
        secrets_client: Any,
        client_request_timeout_seconds: float = DEFAULT_CLIENT_REQUEST_TIMEOUT_SECONDS,
    ) -> None:
        self.table_name = table_name
        self.gateway = gateway
        self.clock = clock
        self.secret_id = secret_id
        """The Secrets Manager secret holding the request-state keys (its id, never its value)."""
        self.secrets_client = secrets_client
        self.client_request_timeout_seconds = client_request_timeout_seconds

    @cached_property
    def vault(self) -> RequestStateVault:
        """2026-07-28: seals, opens and consumes ``requestState`` (the key is fetched on first use)."""
        from mcp_platform.adapters.dynamodb.request_state_vault import RequestStateVault, StateKeysMissing
        from mcp_platform.application.interactive.keys import SecretKeyRing

        if not self.secret_id:
            raise StateKeysMissing("no request-state secret is configured (MCP_REQUEST_STATE_SECRET_ARN)")
        keys = SecretKeyRing(self.secrets_client, self.secret_id)
        return RequestStateVault(keys, self.gateway, self.table_name, clock=self.clock)

    @cached_property
    def outbound(self) -> ServerRequests:
        """2025 revisions: server-to-client requests on a call's stream, answers via the table."""
        from mcp_platform.adapters.dynamodb.replies import ClientReplies
        from mcp_platform.application.interactive.outbound import ServerRequests

        replies = ClientReplies(self.table_name, self.gateway, clock=self.clock)
        return ServerRequests(replies, timeout_seconds=self.client_request_timeout_seconds)
