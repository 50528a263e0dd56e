"""The 2025 revisions' transport: ``Mcp-Session-Id`` sessions in DynamoDB (created by
``initialize``, ended by DELETE), ``notifications/cancelled`` and the client's responses to
server-to-client requests. Mixed into :class:`~mcp_platform.transport.endpoint.McpEndpoint`.

What initialize accepts, negotiates and keeps is the protocol's (``McpServer.initialize``,
:mod:`mcp_platform.protocol.handshake`); here only the session write and its header. Whether a request
needs the transport's own session check is the binding's word (``BoundRequest``). A session id
that cannot have been minted is "not found" before any AWS call (``table_schema.is_session_id``,
checked where the store builds its keys).
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp_platform.adapters.dynamodb.cancellation import CancelFlags
from mcp_platform.adapters.dynamodb.table_schema import KIND_TRANSPORT
from mcp_platform.application.blocking import Blocking
from mcp_platform.application.server import McpServer
from mcp_platform.application.sessions import errors as session_errors
from mcp_platform.protocol.call import CallContext, TransportSession
from mcp_platform.protocol.jsonrpc import INVALID_PARAMS, JsonRpcError, Request, error_message, result_message
from mcp_platform.protocol.versions import DEFAULT_HANDSHAKE_VERSION, HANDSHAKE_VERSIONS, is_modern
from mcp_platform.transport.messages import HttpError, HttpRequest, send_empty
from mcp_platform.transport.messages import send_json as _send_json
from mcp_platform.transport.streaming import ResponseStreamer

SESSION_HEADER = "mcp-session-id"


class HandshakeEra:
    """2025-era request handling; the endpoint provides the attributes declared here."""

    server: McpServer
    sessions: Any
    blocking: Blocking
    streamer: ResponseStreamer
    cancel_flags: CancelFlags | None
    _inflight: dict[tuple[str, str, Any], asyncio.Event]
    listener: Any  # NotificationStreams when subscriptions are on, else None

    async def _post_legacy(
        self,
        request: HttpRequest,
        message: Request,
        principal: str,
        version_header: str | None,
        receive: Any,
        send: Any,
        cors: dict[str, str],
    ) -> None:
        if version_header is not None and version_header not in HANDSHAKE_VERSIONS:
            raise HttpError(400, f"Unsupported MCP-Protocol-Version: {version_header}")
        if message.method == "initialize":
            await self._initialize(message, principal, send, cors)
            return
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            raise HttpError(400, "Missing Mcp-Session-Id header")
        if message.is_notification:
            await self._transport_session(session_id, principal)  # unknown or foreign: 404
            await self._notification(message, session_id, principal)
            await send_empty(send, 202, cors)
            return
        call = CallContext(
            principal=principal,
            protocol_version=version_header or DEFAULT_HANDSHAKE_VERSION,
            modern=False,
            transport=TransportSession(session_id),
        )
        bound = self.server.bind(message, call)
        if not bound.validates_transport_session:
            call.attach_transport_session(await self._transport_session(session_id, principal))
        key = (principal, session_id, message.id)
        self._inflight[key] = call.cancelled
        try:
            headers = {**cors, SESSION_HEADER: session_id}
            # This server offers no resumable streams (no Last-Event-ID), so a result can never
            # reach a client whose stream closed: a disconnect the transport sees stops the call.
            await self.streamer.respond(request, bound, call, send, headers, http_status_errors=False, receive=receive)
        finally:
            self._inflight.pop(key, None)

    async def _initialize(self, message: Request, principal: str, send: Any, cors: dict[str, str]) -> None:
        if message.is_notification:
            raise HttpError(400, "initialize must be a request")
        try:
            initialized = self.server.initialize(message)
        except JsonRpcError as error:
            await _send_json(send, 200, error_message(message.id, error), cors)
            return
        session = await asyncio.to_thread(
            self.sessions.create_session, principal, kind="transport", attributes=initialized.session_attributes
        )
        body = result_message(message.id if message.id is not None else 0, initialized.result)
        await _send_json(send, 200, body, {**cors, SESSION_HEADER: session.id})

    async def _delete(self, request: HttpRequest, principal: str, send: Any, cors: dict[str, str]) -> None:
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            raise HttpError(400, "Missing Mcp-Session-Id header")
        await self._transport_session(session_id, principal)  # only transport sessions end here
        try:
            await asyncio.to_thread(self.sessions.end_session, session_id, owner=principal)
        except session_errors.SessionNotFound as exc:
            raise HttpError(404, "Session not found") from exc
        if self.listener is not None:  # before the last byte: its subscriptions end, its stream sees it
            await self.listener.end_session(session_id)
        await send_empty(send, 200, cors)

    async def _transport_session(self, session_id: str, principal: str) -> Any:
        try:
            # X6: "exists, is the caller's, is alive" only, so eventually consistent (the DAX item cache
            # serves it): a cached live session is a safe answer (its owner never changes; it ends or
            # is extended only through writers that go through DAX), and a cached "missing" or
            # "expired" is confirmed by one consistent read inside get_session before any 404.
            session = await self.blocking(self.sessions.get_session, session_id, owner=principal, consistent=False)
        except session_errors.SessionNotFound as exc:
            raise HttpError(404, "Session not found") from exc
        if session.kind != KIND_TRANSPORT:
            raise HttpError(404, "Session not found")  # an application handle is not an Mcp-Session-Id
        return session

    async def _notification(self, message: Request, session_id: str, principal: str) -> None:
        """The session is the caller's (checked): only its owner can cancel its requests."""
        if message.method != "notifications/cancelled":
            return
        request_id = message.params.get("requestId")
        if request_id is None:
            return  # optional since 2025-11-25 (tasks are cancelled otherwise): nothing to stop
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            raise HttpError(400, "notifications/cancelled: requestId must be a string or an integer", INVALID_PARAMS)
        cancelled = self._inflight.get((principal, session_id, request_id))
        if cancelled is not None:
            cancelled.set()
        elif self.cancel_flags is not None:
            # On Lambda the call runs in another environment (one request per environment):
            # leave a flag in the table for the instance running it to find on its poll tick.
            await asyncio.to_thread(self.cancel_flags.request, session_id, request_id, owner=principal)

    async def _post_reply(
        self,
        request: HttpRequest,
        reply: dict[str, Any],
        principal: str,
        version_header: str | None,
        send: Any,
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
        await self._transport_session(session_id, principal)
        interactive = self.server.services.interactive
        if interactive is None:
            raise HttpError(400, "No outstanding server request has this id")
        from mcp_platform.application.interactive.outbound import ReplyRefused  # first reply: not at start

        try:
            await interactive.outbound.receive(session_id, reply, owner=principal)
        except ReplyRefused as exc:
            raise HttpError(exc.status, str(exc)) from exc
        await send_empty(send, 202, cors)
