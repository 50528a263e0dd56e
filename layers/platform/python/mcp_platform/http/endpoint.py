"""The MCP endpoint as an ASGI app: Streamable HTTP for both protocol eras on one path.

Era per request, as the official SDK does: an ``MCP-Protocol-Version`` header naming a 2025
revision (or no header) is the handshake era with ``Mcp-Session-Id`` sessions stored in
DynamoDB, so any instance serves any session; anything else is the stateless 2026-07-28 era.

Lifespan (uvicorn ``--lifespan on``): on shutdown (SIGTERM; Lambda sends SIGKILL about 300 ms
later) the events still buffered are flushed within a bound, then shutdown completes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from mcp_platform.auth.base import Authenticator, AuthError
from mcp_platform.http.messages import HttpError, HttpRequest, decode_json, read_body, send_empty, send_http_error
from mcp_platform.http.messages import send_json as _send_json
from mcp_platform.http.modern import check_envelope, check_notification_version, requested_log_level
from mcp_platform.http.security import RequestGuard
from mcp_platform.http.streaming import ResponseStreamer
from mcp_platform.mcp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    JsonRpcError,
    Request,
    error_message,
    parse_message,
    result_message,
)
from mcp_platform.mcp.server import CallContext, McpServer
from mcp_platform.mcp.versions import DEFAULT_HANDSHAKE_VERSION, HANDSHAKE_VERSIONS, is_modern
from mcp_platform.sessions import errors as session_errors
from mcp_platform.sessions.cancellation import CancelFlags
from mcp_platform.table_schema import KIND_TRANSPORT

logger = logging.getLogger(__name__)

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
HEALTH_PATH = "/healthz"
PREFLIGHT_HEADERS = {
    "access-control-allow-methods": "POST, DELETE",
    "access-control-allow-headers": "authorization, content-type, accept, mcp-session-id, mcp-protocol-version, "
    "mcp-method, mcp-name, last-event-id",
    "access-control-max-age": "600",
}
# Lambda sends SIGKILL about 300 ms after SIGTERM: the shutdown flush must end before that.
SHUTDOWN_FLUSH_SECONDS = 0.25


class McpEndpoint:
    def __init__(
        self,
        server: McpServer,
        authenticator: Authenticator,
        guard: RequestGuard,
        streamer: ResponseStreamer,
        *,
        path: str = "/mcp",
        max_request_bytes: int = 1_048_576,
        cancel_flags: CancelFlags | None = None,
        shutdown_flush_seconds: float = SHUTDOWN_FLUSH_SECONDS,
    ) -> None:
        self.server = server
        self.sessions = server.services.sessions
        self.authenticator = authenticator
        self.guard = guard
        self.streamer = streamer
        self.path = path
        self.max_request_bytes = max_request_bytes
        self.cancel_flags = cancel_flags
        self.shutdown_flush_seconds = shutdown_flush_seconds
        self._inflight: dict[tuple[str, str, Any], asyncio.Event] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"] == HEALTH_PATH:
            await _send_json(send, 200, {"status": "ok"})  # readiness: no AWS call
            return
        request = HttpRequest(scope)
        cors: dict[str, str] = {}
        started = False

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._route(request, receive, tracked_send, cors)
        except HttpError as exc:
            exc.headers.update(cors)
            await send_http_error(tracked_send, exc)
        except Exception:
            # A dependency failed (DynamoDB throttled or unreachable, ...): logged with its
            # trace and answered 503 + Retry-After, never a 500, when no byte has left yet.
            # Once a stream has started, the streamer has already ended it with an error event.
            logger.exception("request failed: %s %s", request.method, request.path)
            if not started:
                unavailable = HttpError(
                    503, "Temporarily unavailable, retry later", INTERNAL_ERROR, headers={**cors, "retry-after": "1"}
                )
                await send_http_error(tracked_send, unavailable)

    async def _route(self, request: HttpRequest, receive: Any, send: Any, cors: dict[str, str]) -> None:
        """``cors`` is filled in place, so refusals raised later still carry the CORS headers."""
        if request.path != self.path:
            raise HttpError(404, "Not found")
        self.guard.check(request)
        cors.update(self.guard.cors_headers(request))
        if request.method == "OPTIONS":
            await send_empty(send, 204, {**cors, **PREFLIGHT_HEADERS})
            return
        principal = await self._authenticate(request)
        modern = is_modern(request.headers.get(VERSION_HEADER))
        if request.method == "POST":
            await self._post(request, principal.id, receive, send, cors)
        elif request.method == "DELETE" and not modern:
            await self._delete(request, principal.id, send, cors)
        else:
            # No server-initiated stream is offered (GET), and 2026 has no DELETE.
            allow = "POST" if modern else "POST, DELETE"
            raise HttpError(405, f"Method {request.method} not allowed", headers={"allow": allow})

    async def _authenticate(self, request: HttpRequest) -> Any:
        try:
            return await self.authenticator.authenticate(request.headers, request.client_host)
        except AuthError as exc:
            raise HttpError(exc.status, str(exc), headers={"www-authenticate": exc.www_authenticate}) from exc

    async def _delete(self, request: HttpRequest, principal: str, send: Any, cors: dict[str, str]) -> None:
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            raise HttpError(400, "Missing Mcp-Session-Id header")
        await self._transport_session(session_id, principal)  # only transport sessions end here
        try:
            await asyncio.to_thread(self.sessions.end_session, session_id, owner=principal)
        except session_errors.SessionNotFound as exc:
            raise HttpError(404, "Session not found") from exc
        await send_empty(send, 200, cors)

    async def _post(self, request: HttpRequest, principal: str, receive: Any, send: Any, cors: dict[str, str]) -> None:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise HttpError(415, "Content-Type must be application/json")
        if not request.accepts("application/json"):
            raise HttpError(406, "Accept must include application/json and text/event-stream")
        body = await read_body(receive, self.max_request_bytes, request.headers.get("content-length"))
        try:
            message = parse_message(decode_json(body))
        except JsonRpcError as exc:
            raise HttpError(400, exc.message, exc.code) from exc
        version_header = request.headers.get(VERSION_HEADER)
        if is_modern(version_header):
            await self._post_modern(request, message, principal, receive, send, cors)
        else:
            await self._post_legacy(request, message, principal, version_header, send, cors)

    async def _post_modern(
        self, request: HttpRequest, message: Request, principal: str, receive: Any, send: Any, cors: dict[str, str]
    ) -> None:
        if message.is_notification:
            check_notification_version(request)
            await send_empty(send, 202, cors)
            return
        try:
            version = check_envelope(request, message)
            log_level = requested_log_level(message)
        except HttpError as exc:
            exc.request_id = message.id
            raise
        call = CallContext(principal=principal, protocol_version=version, modern=True, log_level=log_level)
        # 2026: closing the response stream is how a client cancels (2025: it is not).
        await self.streamer.respond(request, message, call, send, cors, http_status_errors=True, receive=receive)

    async def _post_legacy(
        self,
        request: HttpRequest,
        message: Request,
        principal: str,
        version_header: str | None,
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
            transport_session_id=session_id,
        )
        if not self.server.defers_transport_check(message, call):
            session = await self._transport_session(session_id, principal)
            call.transport_session = session
            call.log_level = str(session.attributes.get("log_level", "info"))
        key = (principal, session_id, message.id)
        self._inflight[key] = call.cancelled
        try:
            headers = {**cors, SESSION_HEADER: session_id}
            await self.streamer.respond(request, message, call, send, headers, http_status_errors=False)
        finally:
            self._inflight.pop(key, None)

    async def _initialize(self, message: Request, principal: str, send: Any, cors: dict[str, str]) -> None:
        if message.is_notification:
            raise HttpError(400, "initialize must be a request")
        requested = message.params.get("protocolVersion")
        if not isinstance(requested, str) or not isinstance(message.params.get("capabilities", {}), dict):
            error = JsonRpcError(INVALID_PARAMS, "initialize needs params.protocolVersion (string) and capabilities")
            await _send_json(send, 200, error_message(message.id, error), cors)
            return
        version = self.server.negotiate(requested)
        client_info = message.params.get("clientInfo")
        session = await asyncio.to_thread(
            self.sessions.create_session,
            principal,
            kind="transport",
            attributes={
                "protocol_version": version,
                "client_name": str((client_info or {}).get("name", ""))[:200] if isinstance(client_info, dict) else "",
                "log_level": "info",
            },
        )
        body = result_message(message.id if message.id is not None else 0, self.server.initialize_result(version))
        await _send_json(send, 200, body, {**cors, SESSION_HEADER: session.id})

    async def _transport_session(self, session_id: str, principal: str) -> Any:
        try:
            # Consistent: session existence decides 404 for every instance (X4).
            session = await asyncio.to_thread(self.sessions.get_session, session_id, owner=principal, consistent=True)
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

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self._flush_on_shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _flush_on_shutdown(self) -> None:
        """Every response flushes before its last byte; what is left here is what a failed flush
        kept buffered (the DLQ refused it) or a request that had not ended yet."""
        flush = self.streamer.flush_events
        if flush is None:
            return
        task = asyncio.ensure_future(flush())
        done, _ = await asyncio.wait({task}, timeout=self.shutdown_flush_seconds)
        if not done:
            # Not awaited after cancel (wait_for would): the bound holds whatever the flush is
            # doing. Its worker thread goes on until the process exits or is killed.
            task.cancel()
            logger.error("shutdown: tool-event flush still running after %.2f s", self.shutdown_flush_seconds)
            return
        try:
            task.result()
        except Exception:
            logger.exception("shutdown: tool-event flush failed")
