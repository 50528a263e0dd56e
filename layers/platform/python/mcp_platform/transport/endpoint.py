"""The MCP endpoint as an ASGI app: Streamable HTTP for both protocol eras on one path.

Era per request, as the official SDK does: an ``MCP-Protocol-Version`` header naming a 2025
revision (or no header) is the handshake era with ``Mcp-Session-Id`` sessions stored in
DynamoDB, so any instance serves any session (:mod:`.legacy`); anything else is the stateless
2026-07-28 era. A repeated security header is refused before any of them is read.

Lifespan (uvicorn ``--lifespan on``): on shutdown (SIGTERM; Lambda sends SIGKILL about 300 ms
later) the events still buffered are flushed within a bound, then shutdown completes.

Trace context: each MCP request is a span (:mod:`mcp_platform.protocol.trace_context`) continuing
the trace its ``_meta`` or its ``traceparent`` header names, else a new trace; it is current
while the request is handled and rides on its ``RequestContext``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp_platform.application.auth.base import Authenticator, AuthError, Principal
from mcp_platform.application.blocking import IN_THREAD, Blocking
from mcp_platform.application.cancellation import CallCancellation
from mcp_platform.application.server import McpServer
from mcp_platform.application.transport_sessions import TransportSessions
from mcp_platform.protocol import trace_context
from mcp_platform.protocol.jsonrpc import INTERNAL_ERROR, JsonRpcError, Request, is_response, parse_message
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.protocol.trace_context import TRACEPARENT, TRACESTATE, TraceContext
from mcp_platform.protocol.versions import CLIENT_CAPABILITIES_META_KEY, is_modern
from mcp_platform.transport.asgi import Message, Receive, Scope, Send
from mcp_platform.transport.legacy import HandshakeEra
from mcp_platform.transport.messages import HttpError, HttpRequest, decode_json, read_body, send_empty, send_http_error
from mcp_platform.transport.messages import send_json as _send_json
from mcp_platform.transport.modern import (
    check_envelope,
    check_notification_version,
    check_param_headers,
    requested_log_level,
)
from mcp_platform.transport.protected_resource import require_tool_scopes, serve_metadata
from mcp_platform.transport.security import RequestGuard, check_single_valued
from mcp_platform.transport.streaming import Flush, ResponseStreamer

if TYPE_CHECKING:  # an API-key stack never loads the OAuth modules, a stack without rules no governance
    from mcp_platform.application.auth.resource import ProtectedResource
    from mcp_platform.application.governance.admission import Governor
    from mcp_platform.application.policies.access import Policies
    from mcp_platform.authorization_server import LazyFacade
    from mcp_platform.protocol.access import Access
    from mcp_platform.transport.listen import NotificationStreams
    from mcp_platform.transport.origin_verify import OriginVerifier

logger = logging.getLogger(__name__)

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
    """Routes each request: health, OAuth metadata and facade, then the MCP path, where the
    2026 era is served here and the 2025 era by :class:`HandshakeEra` (``handshake``)."""

    def __init__(
        self,
        server: McpServer,
        authenticator: Authenticator,
        guard: RequestGuard,
        streamer: ResponseStreamer,
        *,
        path: str = "/mcp",
        max_request_bytes: int = 1_048_576,
        body_timeout_seconds: float = 10.0,
        transport_sessions: TransportSessions | None = None,
        cancellation: CallCancellation | None = None,
        shutdown_flush_seconds: float = SHUTDOWN_FLUSH_SECONDS,
        protected_resource: ProtectedResource | None = None,
        listener: NotificationStreams | None = None,
        facade: LazyFacade | None = None,
        blocking: Blocking = IN_THREAD,
        shutdown_flush: Flush | None = None,
        governor: Governor | None = None,
        policies: Policies | None = None,
        origin_verifier: OriginVerifier | None = None,
    ) -> None:
        self.server = server
        self.policies = policies
        """Policy files configured: each request carries its caller's view of them (``RequestContext.access``)."""
        self.blocking = blocking
        self.origin_verifier = origin_verifier
        """edge=cloudfront: every request but the health check must carry the origin-verify header."""
        self.governor = governor
        """Rate limits or quotas configured: every MCP request is admitted by it first."""
        self.facade = facade
        """OAuth facade on: its authorization-server paths are routed to it (authorization_server/)."""
        self.listener = listener
        """Stack option ``subscriptions``: the 2025 GET stream and 2026 subscriptions/listen."""
        self.protected_resource = protected_resource
        """OAuth mode: RFC 9728 metadata is served, tools' scopes are enforced."""
        self.store = server.services.store
        """The session store (the one the server's services use)."""
        self.authenticator = authenticator
        self.guard = guard
        self.streamer = streamer
        self.path = path
        self.max_request_bytes = max_request_bytes
        self.body_timeout_seconds = body_timeout_seconds
        self.shutdown_flush_seconds = shutdown_flush_seconds
        self.shutdown_flush = shutdown_flush or streamer.flush_events
        """What the lifespan's shutdown flushes, within ``shutdown_flush_seconds`` (default: what
        every response flushes)."""
        self.handshake = HandshakeEra(
            server=server,
            # Defaults: the server's session store, and cancellations that reach local calls only.
            sessions=transport_sessions or TransportSessions(self.store, blocking=blocking),
            streamer=streamer,
            cancellation=cancellation or CallCancellation(),
            listener=listener,
        )
        """The 2025 era: transport sessions, notifications/cancelled, replies to our requests."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"] == HEALTH_PATH:
            await _send_json(send, 200, {"status": "ok"})  # readiness: no AWS call
            return
        if self.origin_verifier is not None and not await self._through_edge(self.origin_verifier, scope, send):
            return
        if self.protected_resource is not None and scope["path"] in self.protected_resource.metadata_paths:
            await serve_metadata(self.protected_resource, HttpRequest(scope), send)  # public: no auth
            return
        if self.facade is not None and scope["path"] in self.facade.paths:
            await self.facade(scope, receive, send)  # public: it authenticates clients itself
            return
        request = HttpRequest(scope)
        cors: dict[str, str] = {}
        started = False
        # The request's span is made once its body is read (``_post``); until the request is
        # over, every log and metric line written for it carries its ids.
        trace_scope = trace_context.scope()

        async def tracked_send(message: Message) -> None:
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
        finally:
            trace_context.end_scope(trace_scope)

    async def _through_edge(self, verifier: OriginVerifier, scope: Scope, send: Send) -> bool:
        """False, the refusal sent, unless the request carries one origin-verify value: it came
        through the CloudFront distribution (transport/origin_verify.py)."""
        from mcp_platform.application.interactive.keys import KeyRingError
        from mcp_platform.transport.origin_verify import ORIGIN_VERIFY_HEADER

        request = HttpRequest(scope)
        presented = request.headers.get(ORIGIN_VERIFY_HEADER) if request.count(ORIGIN_VERIFY_HEADER) <= 1 else None
        try:
            if await self.blocking(verifier.accepts, presented):
                return True
        except KeyRingError:
            # Refusing every request would be an outage of its own: say so, and let clients retry.
            logger.exception("origin-verify secret unusable")
            unavailable = HttpError(503, "Temporarily unavailable, retry later", INTERNAL_ERROR, {"retry-after": "1"})
            await send_http_error(send, unavailable)
            return False
        await send_http_error(send, HttpError(403, "Forbidden: call the endpoint at its public address"))
        return False

    async def _route(self, request: HttpRequest, receive: Receive, send: Send, cors: dict[str, str]) -> None:
        """``cors`` is filled in place, so refusals raised later still carry the CORS headers."""
        if request.path != self.path:
            raise HttpError(404, "Not found")
        self.guard.check(request)
        cors.update(self.guard.cors_headers(request))
        check_single_valued(request)  # before any of them is read (auth, era, session)
        if request.method == "OPTIONS":
            methods = {"access-control-allow-methods": "GET, POST, DELETE"} if self.listener is not None else {}
            await send_empty(send, 204, {**cors, **PREFLIGHT_HEADERS, **methods})
            return
        principal = await self._authenticate(request)
        modern = is_modern(request.headers.get(VERSION_HEADER))
        if request.method != "POST":
            await self._govern(principal, None)  # GET stream, DELETE: counted like any request
        if request.method == "POST":
            await self._post(request, principal, modern, receive, send, cors)
        elif request.method == "DELETE" and not modern:
            await self.handshake.delete(request, principal.owner, send, cors)
        elif request.method == "GET" and not modern and self.listener is not None:
            transport_session = self.handshake.transport_session
            await self.listener.get_stream(request, principal.owner, transport_session, receive, send, cors)
        else:
            # 2026 has no GET stream and no DELETE; 2025 offers the GET stream with subscriptions on.
            allow = "POST" if modern else ("GET, POST, DELETE" if self.listener is not None else "POST, DELETE")
            raise HttpError(405, f"Method {request.method} not allowed", headers={"allow": allow})

    async def _authenticate(self, request: HttpRequest) -> Principal:
        try:
            return await self.authenticator.authenticate(request.headers, request.client_host)
        except AuthError as exc:
            raise HttpError(exc.status, str(exc), headers={"www-authenticate": exc.www_authenticate}) from exc

    async def _post(
        self, request: HttpRequest, caller: Principal, modern: bool, receive: Receive, send: Send, cors: dict[str, str]
    ) -> None:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise HttpError(415, "Content-Type must be application/json")
        if request.headers.get("content-encoding", "identity").strip().lower() != "identity":
            # Not decoded here: reading a compressed body as JSON would answer a parse error at best.
            # The 415 names the coding accepted (RFC 9110 section 15.5.16).
            unsupported = "Content-Encoding is not supported: send the body unencoded"
            raise HttpError(415, unsupported, headers={"accept-encoding": "identity"})
        if not request.accepts("application/json"):
            raise HttpError(406, "Accept must include application/json and text/event-stream")
        body = await read_body(
            receive, self.max_request_bytes, request.headers.get("content-length"), self.body_timeout_seconds
        )
        decoded = decode_json(body)
        if is_response(decoded):  # the client answering a server-to-client request (2025)
            trace_context.activate(request_trace(request, {}))
            await self._govern(caller, None)
            version_header = request.headers.get(VERSION_HEADER)
            await self.handshake.post_reply(request, decoded, caller.owner, version_header, send, cors)
            return
        try:
            message = parse_message(decoded)
        except JsonRpcError as exc:
            raise HttpError(400, exc.message, exc.code) from exc
        trace = request_trace(request, message.meta)
        trace_context.activate(trace)
        await self._govern(caller, message)  # before anything runs or is written
        if caller.scopes is not None:  # scope-limited credentials (OAuth tokens) only
            require_tool_scopes(self.protected_resource, self.server.catalog.tools.get, request, message, caller)
        access = self.policies.for_caller(caller) if self.policies is not None else None
        if modern:
            await self._post_modern(request, message, caller.owner, trace, receive, send, cors, access)
        else:
            version_header = request.headers.get(VERSION_HEADER)
            await self.handshake.post(
                request, message, caller.owner, version_header, receive, send, cors, trace=trace, access=access
            )

    async def _govern(self, caller: Principal, message: Request | None) -> None:
        """Counts the request against the rate limits (and a tools/call against its tool's and
        the caller's quotas): over one, 429 with ``Retry-After`` and the rule in the error. No
        rule configured: nothing (and nothing of governance is imported)."""
        if self.governor is None:
            return
        from mcp_platform.application.effects import RETRY_AFTER_SECONDS, unavailable
        from mcp_platform.application.governance.admission import Refused, refusal_error
        from mcp_platform.application.governance.ports import CountersUnavailable
        from mcp_platform.application.metrics import GOVERNANCE_REFUSALS, GOVERNANCE_RULE

        name = message.params.get("name") if message is not None and message.method == "tools/call" else None
        request_id = message.id if message is not None else None
        try:
            await self.governor.admit(caller, tool=name if isinstance(name, str) else None)
        except Refused as refused:
            error = refusal_error(refused)
            if self.streamer.metrics is not None:  # the rules are the operator's: a bounded dimension
                self.streamer.metrics.count(GOVERNANCE_REFUSALS, per=(GOVERNANCE_RULE, refused.rule_name))
            retry = {"retry-after": str(refused.retry_after_seconds)}
            raise HttpError(429, error.message, error.code, retry, error.data, request_id) from refused
        except CountersUnavailable as exc:
            # Never admitted unchecked: the limits hold while their counters cannot be read.
            logger.warning("governance: %s", exc)
            error = unavailable("The rate limits cannot be checked right now; retry shortly")
            retry = {"retry-after": str(RETRY_AFTER_SECONDS)}
            raise HttpError(503, error.message, error.code, retry, error.data, request_id) from exc

    async def _post_modern(
        self,
        request: HttpRequest,
        message: Request,
        principal: str,
        trace: TraceContext,
        receive: Receive,
        send: Send,
        cors: dict[str, str],
        access: Access | None = None,
    ) -> None:
        if message.id is None:  # a notification
            check_notification_version(request)
            await send_empty(send, 202, cors)
            return
        try:
            version = check_envelope(request, message)
            log_level = requested_log_level(message)
        except HttpError as exc:
            exc.request_id = message.id
            raise
        declared = message.meta.get(CLIENT_CAPABILITIES_META_KEY)
        call = RequestContext(
            principal=principal,
            protocol_version=version,
            modern=True,
            declared_log_level=log_level,
            declared_capabilities=declared if isinstance(declared, dict) else {},
            trace=trace,
            access=access,
        )
        bound = self.server.bind(message, call)  # no I/O and no refusal: the checks below come first
        if bound.header_mirrors:
            try:
                check_param_headers(request, message, bound.header_mirrors)
            except HttpError as exc:
                exc.request_id = message.id
                raise
        if bound.opens_listen_stream and self.listener is not None:
            # Off: -32601 below. The policies decide what it may listen to as what it may read.
            await self.listener.listen(request, message, principal, receive, send, cors, access=access)
            return
        # 2026: closing the response stream is how a client cancels.
        await self.streamer.respond(request, bound, call, send, cors, http_status_errors=True, receive=receive)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
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
        flush = self.shutdown_flush
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


def request_trace(request: HttpRequest, meta: Mapping[str, Any]) -> TraceContext:
    """The request's span (:func:`mcp_platform.protocol.trace_context.request_trace`): its
    ``_meta`` first, then its headers. Two ``traceparent`` headers name no parent (W3C); several
    ``tracestate`` headers are one list."""
    parents = request.values(TRACEPARENT)
    states = request.values(TRACESTATE)
    header = parents[0] if len(parents) == 1 else None
    return trace_context.request_trace(meta, header, ",".join(states) if states else None)
