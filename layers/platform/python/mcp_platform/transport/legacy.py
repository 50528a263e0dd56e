"""The 2025 revisions' transport: ``Mcp-Session-Id`` sessions (created by ``initialize``, ended
by DELETE), ``notifications/cancelled`` and the client's responses to server-to-client
requests. :class:`HandshakeEra` is the part of :class:`~mcp_platform.transport.endpoint.McpEndpoint`
that serves the 2025 era.

What initialize accepts, negotiates and keeps is the protocol's (``McpServer.initialize``,
:mod:`mcp_platform.protocol.handshake`); creating, checking and ending the session is the
application's (:class:`~mcp_platform.application.transport_sessions.TransportSessions`), and so is
reaching a call to cancel (:class:`~mcp_platform.application.cancellation.CallCancellation`); here
only the HTTP side of them. Whether a request needs the transport's own session check is the
binding's word (``BoundRequest``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_platform.application.cancellation import CallCancellation
from mcp_platform.application.server import McpServer
from mcp_platform.application.sessions.errors import SessionNotFound
from mcp_platform.application.transport_sessions import TransportSessions
from mcp_platform.protocol.jsonrpc import INVALID_PARAMS, JsonRpcError, Request, error_message, result_message
from mcp_platform.protocol.request_context import RequestContext, TransportSession
from mcp_platform.protocol.versions import DEFAULT_HANDSHAKE_VERSION, HANDSHAKE_VERSIONS, is_modern
from mcp_platform.transport.asgi import Receive, Send
from mcp_platform.transport.messages import HttpError, HttpRequest, send_empty
from mcp_platform.transport.messages import send_json as _send_json
from mcp_platform.transport.streaming import ResponseStreamer

if TYPE_CHECKING:  # annotations only (the listen module loads only with subscriptions on: cold start)
    from mcp_platform.application.sessions.model import Session
    from mcp_platform.protocol.access import Access
    from mcp_platform.protocol.trace_context import TraceContext
    from mcp_platform.transport.listen import NotificationStreams

SESSION_HEADER = "mcp-session-id"


class HandshakeEra:
    """2025-era request handling: the endpoint holds one and hands it the 2025 requests."""

    def __init__(
        self,
        *,
        server: McpServer,
        sessions: TransportSessions,
        streamer: ResponseStreamer,
        cancellation: CallCancellation,
        listener: NotificationStreams | None = None,
    ) -> None:
        self.server = server
        self.sessions = sessions
        self.streamer = streamer
        self.cancellation = cancellation
        self.listener = listener
        """Stack option ``subscriptions``: a DELETE ends the session's subscriptions too."""

    async def post(
        self,
        request: HttpRequest,
        message: Request,
        principal: str,
        version_header: str | None,
        receive: Receive,
        send: Send,
        cors: dict[str, str],
        *,
        trace: TraceContext | None = None,
        access: Access | None = None,
    ) -> None:
        """``trace``: the request's span (the endpoint's reading of its ``_meta`` and headers);
        ``access``: what the policies let the caller use (None: no policies)."""
        if version_header is not None and version_header not in HANDSHAKE_VERSIONS:
            raise HttpError(400, f"Unsupported MCP-Protocol-Version: {version_header}")
        if message.method == "initialize":
            await self._initialize(message, principal, send, cors)
            return
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            raise HttpError(400, "Missing Mcp-Session-Id header")
        if message.is_notification:
            await self.transport_session(session_id, principal)  # unknown or foreign: 404
            await self._notification(message, session_id, principal)
            await send_empty(send, 202, cors)
            return
        call = RequestContext(
            principal=principal,
            protocol_version=version_header or DEFAULT_HANDSHAKE_VERSION,
            modern=False,
            transport=TransportSession(session_id),
            trace=trace,
            access=access,
        )
        bound = self.server.bind(message, call)
        if not bound.validates_transport_session:
            call.attach_transport_session(await self.transport_session(session_id, principal))
        assert message.id is not None  # a notification was answered above
        with self.cancellation.running(call, message.id):  # notifications/cancelled reaches it
            headers = {**cors, SESSION_HEADER: session_id}
            # This server offers no resumable streams (no Last-Event-ID), so a result can never
            # reach a client whose stream closed: a disconnect the transport sees stops the call.
            await self.streamer.respond(request, bound, call, send, headers, http_status_errors=False, receive=receive)

    async def _initialize(self, message: Request, principal: str, send: Send, cors: dict[str, str]) -> None:
        if message.is_notification:
            raise HttpError(400, "initialize must be a request")
        try:
            initialized = self.server.initialize(message)
        except JsonRpcError as error:
            await _send_json(send, 200, error_message(message.id, error), cors)
            return
        session = await self.sessions.open(principal, initialized.session_attributes)
        body = result_message(message.id if message.id is not None else 0, initialized.result)
        await _send_json(send, 200, body, {**cors, SESSION_HEADER: session.id})

    async def delete(self, request: HttpRequest, principal: str, send: Send, cors: dict[str, str]) -> None:
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            raise HttpError(400, "Missing Mcp-Session-Id header")
        try:
            await self.sessions.end(session_id, principal)  # only transport sessions end here
        except SessionNotFound as exc:
            raise HttpError(404, "Session not found") from exc
        if self.listener is not None:  # before the last byte: its subscriptions end, its stream sees it
            await self.listener.end_session(session_id)
        await send_empty(send, 200, cors)

    async def transport_session(self, session_id: str, principal: str) -> Session:
        """The caller's live transport session, else 404 (whatever the reason: no oracle)."""
        try:
            return await self.sessions.require(session_id, principal)
        except SessionNotFound as exc:
            raise HttpError(404, "Session not found") from exc

    async def _notification(self, message: Request, session_id: str, principal: str) -> None:
        """The session is the caller's (checked): only its owner can cancel its requests."""
        if message.method != "notifications/cancelled":
            return
        request_id = message.params.get("requestId")
        if request_id is None:
            return  # optional since 2025-11-25 (tasks are cancelled otherwise): nothing to stop
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            raise HttpError(400, "notifications/cancelled: requestId must be a string or an integer", INVALID_PARAMS)
        # Here, or (on Lambda: one request per environment) on the instance running the call.
        await self.cancellation.cancel(session_id, request_id, owner=principal)

    async def post_reply(
        self,
        request: HttpRequest,
        reply: dict[str, Any],
        principal: str,
        version_header: str | None,
        send: Send,
        cors: dict[str, str],
    ) -> None:
        """A client's response to one of our server-to-client requests (202), whichever instance
        holds the call (``interactive.outbound``). Unknown or foreign session: 404; unknown
        request id, another principal's request, or an answer given twice: 400."""
        if is_modern(version_header):
            raise HttpError(400, "2026-07-28 has no server-to-client requests: answer with inputResponses")
        if version_header is not None and version_header not in HANDSHAKE_VERSIONS:
            raise HttpError(400, f"Unsupported MCP-Protocol-Version: {version_header}")
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            raise HttpError(400, "Missing Mcp-Session-Id header")
        await self.transport_session(session_id, principal)
        interactive = self.server.services.interactive
        if interactive is None:
            raise HttpError(400, "No outstanding server request has this id")
        from mcp_platform.application.interactive.outbound import ReplyRefused  # first reply: not at start

        try:
            await interactive.outbound.receive(session_id, reply, owner=principal)
        except ReplyRefused as exc:
            raise HttpError(exc.status, str(exc)) from exc
        await send_empty(send, 202, cors)
