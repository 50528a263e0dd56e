"""One request as the protocol layer sees it (:class:`RequestContext`), built by whoever received it:
the HTTP transport, or the task worker replaying a task's request. (A *tool call* is one kind of
request; its own state is the runner's ``PreparedCall`` and the tool's ``ToolContext``.)

Imports nothing of the protocol core (server, tool_calls, preparation, features), so every one of
them can use it at runtime, without an import cycle or a ``TYPE_CHECKING`` guard.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp_platform.protocol.jsonrpc import JSONObject

if TYPE_CHECKING:
    from mcp_platform.protocol.access import Access
    from mcp_platform.protocol.trace_context import TraceContext

Notify = Callable[[JSONObject], Awaitable[None]]


async def discard_notification(_: JSONObject) -> None:
    """The default ``notify``: the request has no stream to its client (a plain JSON answer),
    so what its work sends is dropped; ``interactive.outbound`` tells "cannot ask" by it."""
    return None


@dataclass
class TransportSession:
    """2025 era: the request's ``Mcp-Session-Id`` and, once validated, the stored session."""

    id: str
    stored: Any = None
    """``sessions.Session``: read by the transport, or by a session tool's own consistent read of
    it (:class:`~mcp_platform.protocol.binding.BoundRequest`); None until then."""


@dataclass(slots=True)
class RequestContext:
    """One request, in four parts (kept flat but for the transport session, see below):

    * caller and era: ``principal``, ``protocol_version``, ``modern``;
    * the 2025 transport session: ``transport`` (None in the 2026 era, and for a task whose
      request came without one);
    * what the client declared: ``log_level``, ``client_capabilities`` (2026: the request's
      ``_meta``; 2025: its initialize, kept on the transport session and copied by
      :meth:`attach_transport_session`);
    * the channel back to the client: ``notify``, ``cancelled``, ``interaction``;
    * ``trace``: the request's span (:mod:`mcp_platform.protocol.trace_context`), which what the
      request writes carries (its tool-call event and records, a task, a 2025 server request);
    * ``access``: what the policies let the caller use (:mod:`mcp_platform.protocol.access`).

    The channel stays flat fields: each is set by a different party (the streamer and the task
    worker set ``notify``, the 2025 transport registers ``cancelled`` for notifications/cancelled,
    ``bind`` sets ``interaction``) and read where a ``ToolContext`` is built; a nested object
    would change each of those sites and decouple nothing.
    """

    principal: str
    protocol_version: str
    modern: bool
    log_level: str | None = "info"
    client_capabilities: JSONObject | None = None
    """What the client declared; None: unknown (a session from before capabilities were kept),
    so nothing is refused for it."""
    transport: TransportSession | None = None
    notify: Notify = discard_notification
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    interaction: Any = None
    """How this request asks its client for input (``interactive.api.Interaction``), set by bind."""
    trace: TraceContext | None = None
    """The request's span; None only where no transport made one (tests calling the core)."""
    access: Access | None = None
    """What the deployment's policies let the caller use; None: no policies, everything permitted."""

    @property
    def transport_session_id(self) -> str | None:
        return self.transport.id if self.transport is not None else None

    @property
    def transport_session(self) -> Any:
        """The validated transport session (``sessions.Session``), None until validated."""
        return self.transport.stored if self.transport is not None else None

    def attach_transport_session(self, session: Any) -> None:
        """2025: the validated Mcp-Session-Id session, and what its initialize negotiated (the
        attributes :func:`mcp_platform.protocol.handshake.transport_session_attributes` stored)."""
        assert self.transport is not None, "only a 2025 request (one with an Mcp-Session-Id) has one"
        self.transport.stored = session
        self.log_level = str(session.attributes.get("log_level", self.log_level))
        declared = session.attributes.get("client_capabilities")
        if isinstance(declared, dict):
            self.client_capabilities = declared
