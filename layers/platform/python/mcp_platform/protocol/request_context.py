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
    """2025 era: the request's ``Mcp-Session-Id`` and, once validated, the stored session. Mutable:
    the session is validated after the request is read."""

    id: str
    stored: Any = None
    """``sessions.Session``: read by the transport, or by a session tool's own consistent read of
    it (:class:`~mcp_platform.protocol.binding.BoundRequest`); None until then."""


@dataclass
class ClientChannel:
    """The way back to the client, opened while the request is served: the mutable part of a
    :class:`RequestContext`, each field set by the party that opens it."""

    notify: Notify = discard_notification
    """Sends a message to the client: set by the streamer once the answer is a stream (the task
    worker's goes to the task's status)."""
    interaction: Any = None
    """How this request asks its client for input (``interactive.api.Interaction``), opened by
    the server's admission of a request that may ask; None: it cannot ask."""


@dataclass(frozen=True, slots=True)
class RequestContext:
    """One request:

    * caller and era: ``principal``, ``protocol_version``, ``modern``;
    * what the client declared: ``log_level``, ``client_capabilities`` (2026: the request's
      ``_meta``; 2025: its initialize, kept on the transport session, once that is attached);
    * the 2025 transport session: ``transport`` (None in the 2026 era, and for a task whose
      request came without one);
    * the channel back to the client: ``channel`` (``notify``, ``interaction``) and
      ``cancelled``;
    * ``trace``: the request's span (:mod:`mcp_platform.protocol.trace_context`), which what the
      request writes carries (its tool-call event and records, a task, a 2025 server request);
    * ``access``: what the policies let the caller use (:mod:`mcp_platform.protocol.access`).

    Frozen: what is learnt while the request is served lives in two named, mutable parts, the
    transport session (validated after the request is read) and the channel.
    """

    principal: str
    protocol_version: str
    modern: bool
    declared_log_level: str | None = "info"
    """The request's own minimum log level (2026: its ``_meta``); None: send no log notifications."""
    declared_capabilities: JSONObject | None = None
    """What the request itself declared (2026: its ``_meta``); None: unknown."""
    transport: TransportSession | None = None
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    trace: TraceContext | None = None
    """The request's span; None only where no transport made one (tests calling the core)."""
    access: Access | None = None
    """What the deployment's policies let the caller use; None: no policies, everything permitted."""
    channel: ClientChannel = field(default_factory=ClientChannel)

    @property
    def transport_session_id(self) -> str | None:
        return self.transport.id if self.transport is not None else None

    @property
    def transport_session(self) -> Any:
        """The validated transport session (``sessions.Session``), None until validated."""
        return self.transport.stored if self.transport is not None else None

    @property
    def log_level(self) -> str | None:
        """The minimum level of log notifications: the attached transport session's (2025: what
        initialize and logging/setLevel kept), else the request's own."""
        stored = self.transport_session
        if stored is None:
            return self.declared_log_level
        return str(stored.attributes.get("log_level", self.declared_log_level))

    @property
    def client_capabilities(self) -> JSONObject | None:
        """What the client declared: the attached transport session's (2025: its initialize's),
        else the request's own; None: unknown (a session from before capabilities were kept), so
        nothing is refused for it."""
        stored = self.transport_session
        declared = stored.attributes.get("client_capabilities") if stored is not None else None
        return declared if isinstance(declared, dict) else self.declared_capabilities

    def attach_transport_session(self, session: Any) -> None:
        """2025: the validated Mcp-Session-Id session, whose attributes
        (:func:`mcp_platform.protocol.handshake.transport_session_attributes`) say what its
        initialize negotiated."""
        assert self.transport is not None, "only a 2025 request (one with an Mcp-Session-Id) has one"
        self.transport.stored = session
