"""What the protocol layer tells the transport about one request before anything can refuse it:
:class:`BoundRequest`, returned by ``McpServer.bind``. The transport decides from it, never from
a method's name, whether to check the transport session itself, whether to offer a stream,
which argument headers to check (those of the tool the request names) and whether the request opens
a notification stream.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mcp_platform.protocol.jsonrpc import JSONObject, JsonRpcError, Request

LISTEN_METHOD = "subscriptions/listen"
"""2026: a request answered by a stream of notifications, not by a result."""

Work = Callable[[], Awaitable[JSONObject]]
"""The request's work: its result, once it has been admitted."""


@dataclass(frozen=True, slots=True)
class BoundRequest:
    request: Request
    admit: Callable[[], Awaitable[Work]]
    """Everything that can refuse the request (unknown method or tool, bad params, missing
    session: a JsonRpcError), then its work. The transport answers refusals as plain JSON and
    commits to a stream only for work."""
    streams: bool = False
    """Its work may send notifications or requests before its result (tools/call: progress,
    logs, 2025 elicitation): worth an SSE stream when the client accepts one."""
    validates_transport_session: bool = False
    """2025: its own consistent read covers the request's Mcp-Session-Id (a session tool on the
    transport session reads session and idempotency marker in one BatchGetItem), so the
    transport skips its separate check; an unknown session then surfaces from ``admit`` as
    ``TransportSessionNotFound``. False whenever the request would be refused before that
    read, so an unknown session is still answered 404 first."""
    header_mirrors: tuple[tuple[str, str], ...] = ()
    """(argument, header name) pairs of the tool a ``tools/call`` names, when the catalog has one
    by that name (even if the call is refused otherwise): the transport checks that each header
    mirrors its argument (SEP-2243, ``ToolSpec.mirrored_headers``)."""

    @property
    def opens_listen_stream(self) -> bool:
        """``subscriptions/listen``: served by the notification streams when they are on (the
        server itself refuses it as an unknown method when they are off)."""
        return self.request.method == LISTEN_METHOD


def refusal(error: JsonRpcError) -> Callable[[], Awaitable[Work]]:
    """An ``admit`` that refuses: a refusal found while binding waits for the transport's checks."""

    async def admit() -> Work:
        raise error

    return admit
