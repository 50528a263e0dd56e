"""Writes one request's response: plain JSON, or an SSE stream obeying S2-S7.

A request streams when its binding says its work may send notifications before its result
(``BoundRequest.streams``) and the client accepts ``text/event-stream``: status and
headers leave before the work runs (S2, S4), followed by a first comment; progress and log
notifications are events; keep-alive comments fill silences (S7); a duration cap below the
function timeout ends runaway calls (S7); the final chunk is always written (S3).

Behind the Lambda Web Adapter the invocation ends with the response's last byte: anything
scheduled after it runs only if the environment is thawed again. So every response, plain JSON
or stream, ends the same way: the result leaves (a JSON body's Content-Length tells the client it
has the whole answer), the events are flushed (after the shielded tool-call commits have
settled), the request's span is exported when spans are on (``application.spans``), *then* the
last ASGI message (``more_body: False``) is sent, whether the call completed, was cancelled, hit
the duration cap or failed. No AWS round trip stands between a call and its answer. A committed
call's event is also on its record (the table stream's relay delivers it if the instance dies
before its flush); what a stateless call leaves is in docs/operating/dead-letters.md (K10).

2025 cancellation across instances: a ``notifications/cancelled`` that reaches another instance
is kept where the instance running the call can find it; a streamed call is watched for it
(:meth:`mcp_platform.application.cancellation.CallCancellation.watch`) and, when found, stops
exactly as a local cancellation does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from asyncio import FIRST_COMPLETED
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp_platform.application.blocking import INLINE, Blocking
from mcp_platform.application.cancellation import CallCancellation
from mcp_platform.application.effects import RETRY_AFTER_SECONDS
from mcp_platform.application.metrics import (
    ERROR_TYPE,
    METHOD,
    PROMPT,
    PROTOCOL_VERSION,
    TOOL,
    MetricsWriter,
)
from mcp_platform.application.tool_calls import TransportSessionNotFound
from mcp_platform.protocol.access import FORBIDDEN_HTTP_STATUS
from mcp_platform.protocol.binding import BoundRequest
from mcp_platform.protocol.jsonrpc import (
    FORBIDDEN,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LIMIT_EXCEEDED,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNAVAILABLE,
    UNSUPPORTED_PROTOCOL_VERSION,
    JSONObject,
    JsonRpcError,
    error_message,
    result_message,
)
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.transport.asgi import Receive, Send
from mcp_platform.transport.messages import HttpError, HttpRequest, end_body, send_json, sse_event, start_sse

logger = logging.getLogger(__name__)

MODERN_ERROR_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
    UNAVAILABLE: 503,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    FORBIDDEN: FORBIDDEN_HTTP_STATUS,
}
# The methods whose operation metric is also dimensioned by what they name (OpenTelemetry MCP).
TARGETED_METHODS = {"tools/call": TOOL, "prompts/get": PROMPT}
FIRST_EVENT = b": stream open\n\n"
KEEPALIVE = b": keep-alive\n\n"

Flush = Callable[[], Awaitable[None]]
MAX_NAME_CHARS = 128  # a tool or prompt name a client sent, as a metric property or span attribute

if TYPE_CHECKING:
    from mcp_platform.application.spans import Span, Spans
    from mcp_platform.protocol.trace_context import TraceContext


class ResponseStreamer:
    def __init__(
        self,
        metrics: MetricsWriter | None = None,
        flush_events: Flush | None = None,
        *,
        keepalive_seconds: float = 15.0,
        max_stream_seconds: float = 840.0,
        cancellation: CallCancellation | None = None,
        spans: Spans | None = None,
        blocking: Blocking = INLINE,
    ) -> None:
        self.metrics = metrics
        self.flush_events = flush_events
        self.keepalive_seconds = keepalive_seconds
        self.max_stream_seconds = max_stream_seconds
        self.cancellation = cancellation
        """2025: what watches a streamed call for a cancellation posted to another instance."""
        self.spans = spans
        """Set when spans are exported (OTLP): each request's span leaves before its last byte."""
        self.blocking = blocking
        """How the span export (a blocking POST to the collector) runs: as the AWS calls do."""

    async def respond(
        self,
        request: HttpRequest,
        bound: BoundRequest,
        call: RequestContext,
        send: Send,
        headers: dict[str, str],
        *,
        http_status_errors: bool,
        receive: Receive | None = None,
    ) -> None:
        """``receive`` given: a client disconnect the transport sees cancels a streamed call
        (2026-07-28 semantics; in 2025 too, where no stream is resumable here)."""
        timing = ResponseTiming(started=time.monotonic())
        request_id = bound.request.id
        outcome: dict[str, Any] = {}  # the response message, once there is one (for the metric)
        export_span = self._span_export(bound, call, outcome) if self.spans is not None else None
        try:
            try:
                work = await bound.admit()
            except TransportSessionNotFound as exc:
                outcome.update({"error": {"code": "session_not_found"}})
                raise HttpError(404, "Session not found") from exc
            except JsonRpcError as exc:
                outcome.update(error_message(request_id, exc))  # updated, not rebound: the span reads it
                status, extra = _error_status(exc.code, http_status_errors)
                await send_json(send, status, outcome, {**headers, **extra}, more_body=True)
                # A refusal may leave an event (a call the policies denied): flushed before the
                # last byte like every other path's (an empty buffer costs no flush).
                await self._end(send, export_span)
                return
            if bound.streams and request.accepts("text/event-stream"):
                await self._stream(work, request_id, call, send, headers, timing, receive, outcome, export_span)
            else:
                outcome.update(await _outcome(work, request_id))
                status, extra = (
                    _error_status(outcome["error"]["code"], http_status_errors) if "error" in outcome else (200, {})
                )
                try:
                    await send_json(send, status, outcome, {**headers, **extra} if extra else headers, more_body=True)
                    timing.first_byte()
                finally:
                    await self._end(send, export_span)
        finally:
            self._operation(bound, call, outcome, timing)
            if export_span is not None:
                await export_span()  # a response that ended early (refused before any work): after it

    async def _stream(
        self,
        work: Callable[[], Awaitable[dict[str, Any]]],
        request_id: Any,
        call: RequestContext,
        send: Send,
        headers: dict[str, str],
        timing: ResponseTiming,
        receive: Receive | None,
        outcome: dict[str, Any],
        export_span: Flush | None,
    ) -> None:
        queue: asyncio.Queue[tuple[bool, dict[str, Any]]] = asyncio.Queue()

        async def notify(notification: dict[str, Any]) -> None:
            await queue.put((False, notification))

        async def run() -> None:
            outcome.update(await _outcome(work, request_id))
            await queue.put((True, outcome))

        call.channel.notify = notify
        await start_sse(send, headers)
        timing.first_byte()
        task = asyncio.create_task(run())
        cancelled = asyncio.create_task(call.cancelled.wait())
        watcher = asyncio.create_task(_cancel_on_disconnect(receive, call.cancelled)) if receive is not None else None
        watch = self.cancellation.watch(call, request_id) if self.cancellation is not None else None
        flag_watcher = asyncio.create_task(watch) if watch is not None else None
        getter: asyncio.Future[tuple[bool, dict[str, Any]]] | None = None
        try:
            await send({"type": "http.response.body", "body": FIRST_EVENT, "more_body": True})
            deadline = timing.started + self.max_stream_seconds
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    # A limit the request reached, not a server fault: -31005 like the other limits.
                    cap: JSONObject = {"limit": "stream_seconds", "seconds": self.max_stream_seconds}
                    timeout = JsonRpcError(LIMIT_EXCEEDED, "Stream duration cap reached; the call was cancelled", cap)
                    await _send_chunk(send, sse_event(error_message(request_id, timeout)))
                    return
                getter = getter or asyncio.ensure_future(queue.get())
                waiting: set[asyncio.Future[Any]] = {getter, cancelled}
                done, _ = await asyncio.wait(
                    waiting, timeout=min(self.keepalive_seconds, remaining), return_when=FIRST_COMPLETED
                )
                if cancelled in done:
                    return  # notifications/cancelled: stop the work, send no response (2025 spec)
                if not done:
                    await _send_chunk(send, KEEPALIVE)
                    continue
                if time.monotonic() >= deadline:
                    # Past the cap nothing but the cap's error leaves, whatever became ready while
                    # the loop waited (the runner's own limit, at the same length, can end the call
                    # a moment later): one answer for one limit. A committed result is replayed to
                    # a retry.
                    continue
                final, payload = getter.result()
                getter = None
                await _send_chunk(send, sse_event(payload))
                if final:
                    return
        finally:
            for pending in (task, cancelled, getter, watcher, flag_watcher):
                if pending is not None and not pending.done():
                    pending.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await pending
            await self._end(send, export_span)  # S3, after the flush of whatever the call committed

    async def _end(self, send: Send, export_span: Flush | None) -> None:
        """Flush the events and export the request's span, then send the last byte: inside the
        invocation on every path."""
        try:
            if self.flush_events is not None:
                await self.flush_events()
        finally:
            try:
                if export_span is not None:
                    await export_span()
            finally:
                try:  # noqa: SIM105 (a suppress() object on every response)
                    await end_body(send)
                except (OSError, RuntimeError):
                    pass  # the client is gone: nothing to end

    def _span_export(self, bound: BoundRequest, call: RequestContext, outcome: dict[str, Any]) -> Flush:
        """Records the request's span once, when the response is about to end, and exports it."""
        started_ns = time.time_ns()
        done = False

        async def export() -> None:
            nonlocal done
            if done or self.spans is None or call.trace is None:
                return
            done = True
            self.spans.add(_request_span(bound, call.trace, call.protocol_version, outcome, started_ns))
            await self.blocking(self.spans.flush)

        return export

    def _operation(
        self, bound: BoundRequest, call: RequestContext, outcome: dict[str, Any], timing: ResponseTiming
    ) -> None:
        """mcp.server.operation.duration of one request, with its time to first byte in the same
        line. An error is the JSON-RPC error's code, ``tool_error`` for a tool's isError result,
        ``cancelled`` for a call that never answered."""
        if self.metrics is None:
            return
        request = bound.request
        error_type = _error_type(outcome)
        name = request.params.get("name")
        target = None
        properties = {PROTOCOL_VERSION: call.protocol_version, **({ERROR_TYPE: error_type} if error_type else {})}
        if isinstance(name, str) and request.method in TARGETED_METHODS:
            if "result" in outcome:
                target = (TARGETED_METHODS[request.method], name)
            else:
                # A name the server may not know: never a dimension, or made-up names would each
                # become a billed CloudWatch metric. Logs Insights still finds it in the line.
                properties[TARGETED_METHODS[request.method]] = name[:MAX_NAME_CHARS]
        self.metrics.operation(
            method=request.method,
            seconds=time.monotonic() - timing.started,
            failed=bool(error_type),
            target=target,
            properties=properties,
            first_byte_ms=timing.first_byte_ms,
        )


@dataclass
class ResponseTiming:
    """When a response started, and how long its first byte took (S4): both go in the request's
    one metric line, written when it ends."""

    started: float
    first_byte_ms: float | None = None

    def first_byte(self) -> None:
        self.first_byte_ms = (time.monotonic() - self.started) * 1000


def _error_type(outcome: dict[str, Any]) -> str:
    """The JSON-RPC error's code, ``tool_error`` for a tool's isError result, ``cancelled`` for a
    call that never answered; empty when the request succeeded."""
    if "error" in outcome:
        return str(outcome["error"]["code"])
    if not outcome:
        return "cancelled"
    if isinstance(outcome.get("result"), dict) and outcome["result"].get("isError"):
        return "tool_error"
    return ""


def _request_span(
    bound: BoundRequest, trace: TraceContext, protocol_version: str, outcome: dict[str, Any], started_ns: int
) -> Span:
    """The request's span as the OpenTelemetry MCP conventions name it: ``{method} {target}``."""
    from mcp_platform.application.spans import Span, SpanKind  # loaded only where spans are on

    request = bound.request
    attributes: dict[str, str] = {METHOD: request.method, PROTOCOL_VERSION: protocol_version}
    name = request.method
    target = request.params.get("name")
    if isinstance(target, str) and request.method in TARGETED_METHODS:
        attributes[TARGETED_METHODS[request.method]] = target[:MAX_NAME_CHARS]
        name = f"{request.method} {target[:MAX_NAME_CHARS]}"
    if request.id is not None:
        attributes["jsonrpc.request.id"] = str(request.id)
    error_type = _error_type(outcome)
    return Span(
        name=name,
        trace=trace,
        start_ns=started_ns,
        end_ns=time.time_ns(),
        kind=SpanKind.SERVER,
        attributes=attributes,
        error_type=error_type or None,
    )


def _error_status(code: int, http_status_errors: bool) -> tuple[int, dict[str, str]]:
    """2026: one HTTP status table for every error; a retryable store error is 503 with
    Retry-After. 2025: JSON-RPC errors travel in 200 responses."""
    if not http_status_errors:
        return 200, {}
    status = MODERN_ERROR_STATUS.get(code, 200)
    return status, ({"retry-after": str(RETRY_AFTER_SECONDS)} if status == 503 else {})


async def _cancel_on_disconnect(receive: Receive, cancelled: asyncio.Event) -> None:
    """The body has been read: the next ASGI message can only be the client going away.
    (Behind the Lambda Web Adapter no disconnect reaches the app; the duration cap applies.)"""
    while (await receive())["type"] != "http.disconnect":
        continue
    cancelled.set()


async def _send_chunk(send: Send, body: bytes) -> None:
    await send({"type": "http.response.body", "body": body, "more_body": True})


async def _outcome(work: Callable[[], Awaitable[dict[str, Any]]], request_id: Any) -> dict[str, Any]:
    """The JSON-RPC response for the work: its result, or its error (never an exception)."""
    try:
        return result_message(request_id, await work())
    except JsonRpcError as exc:
        return error_message(request_id, exc)
    except Exception:
        logger.exception("request %r failed", request_id)
        return error_message(request_id, JsonRpcError(INTERNAL_ERROR, "Internal error"))
