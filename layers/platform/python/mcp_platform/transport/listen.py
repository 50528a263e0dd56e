"""Notification streams: the 2025 GET stream and the 2026 ``subscriptions/listen`` stream.

Both are SSE responses (S2) that poll the notification log (:mod:`mcp_platform.application.notifications`)
with backoff, keep alive and end at the duration cap (:mod:`.stream_pump`, S7); the last byte is
always sent (S3).

2025: ``GET /mcp`` with ``Mcp-Session-Id`` (404 unknown or another's) delivers the session's
list changes and its ``resources/subscribe`` URIs; every event carries its log sk as ``id``, so a
client that reconnects with ``Last-Event-ID`` resumes after it (within the log's retention).
2026: the request's ``notifications`` filter; an acknowledgement first (the subset honoured),
then the notifications, each tagged with the subscription id (the request id); at the cap the
request's result (a graceful end). 2026 has no resumption (spec). A resource the deployment's
policies forbid the caller to read is refused as its read is (-31010, HTTP 403), before the stream
opens; one it cannot read for any other reason (unknown, another principal's) is left out of the
acknowledged subset.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp_platform.application.notifications import Notice, Notifications
from mcp_platform.application.notifications.ports import SessionLiveness, check_uri
from mcp_platform.application.notifications.reader import ListenSource, LogReader, SessionSource
from mcp_platform.application.sessions.errors import SessionStoreError
from mcp_platform.application.subscriptions import Readable
from mcp_platform.protocol.access import FORBIDDEN_HTTP_STATUS, READ_RESOURCE, Access
from mcp_platform.protocol.binding import LISTEN_METHOD
from mcp_platform.protocol.jsonrpc import (
    FORBIDDEN,
    INVALID_PARAMS,
    JSONObject,
    JsonRpcError,
    Request,
    error_message,
    notification_message,
    result_message,
)
from mcp_platform.transport.messages import HttpError, HttpRequest, end_body, send_json, sse_event, start_sse
from mcp_platform.transport.stream_pump import StreamPump, chunk

logger = logging.getLogger(__name__)

SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
FILTER_FLAGS = {"toolsListChanged": "tools", "promptsListChanged": "prompts", "resourcesListChanged": "resources"}
SESSION_HEADER = "mcp-session-id"
# A comment and a reconnection delay, no data: no event is dispatched, so any 2025 client parses it.
OPENED = b": stream open\nretry: 2000\n\n"


@dataclass(frozen=True)
class Served:
    """What the server notifies about: the list kinds it advertises ``listChanged`` for, and
    whether a principal may read a URI (None: no resources, so nothing to subscribe to).
    A subscription is authorized as a read is: a URI the caller cannot read is not honoured,
    exactly like a URI that names nothing."""

    lists: frozenset[str]
    readable: Readable | None


class NotificationStreams:
    def __init__(
        self,
        notifications: Notifications,
        sessions: SessionLiveness,
        served: Served,
        server_info: dict[str, Any],
        pump: StreamPump,
        *,
        session_check_seconds: float = 60.0,
    ) -> None:
        self.notifications = notifications
        self.sessions = sessions
        self.served = served
        self.server_info = server_info
        self.pump = pump
        self.session_check_seconds = session_check_seconds

    async def get_stream(
        self,
        request: HttpRequest,
        principal: str,
        transport_session: Callable[[str, str], Awaitable[Any]],
        receive: Any,
        send: Any,
        cors: dict[str, str],
    ) -> None:
        """2025 ``GET /mcp``: refusals (400, 404, 406) before any byte; then the stream."""
        if not request.accepts("text/event-stream"):
            raise HttpError(406, "Accept must include text/event-stream")
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            raise HttpError(400, "Missing Mcp-Session-Id header")
        await transport_session(session_id, principal)  # unknown, ended or another's: 404
        log, subscriptions = self.notifications.log, self.notifications.subscriptions
        resume = request.headers.get("last-event-id")
        start = log.cursor(log.clock.now())
        if resume is not None and log.is_cursor(resume) and resume >= log.oldest_cursor():
            start = resume  # ours and within the retention; anything else starts now
        holder = secrets.token_urlsafe(12)
        try:
            await start_sse(send, {**cors, SESSION_HEADER: session_id})
            await chunk(send, OPENED)
            # The lease, then the set: this stream delivers from now on (an older one ends).
            seconds = self.pump.max_stream_seconds + 60
            await self.notifications.blocking(
                subscriptions.claim_stream, session_id, holder, owner=principal, seconds=seconds
            )
            snapshot = await self.notifications.blocking(subscriptions.snapshot, session_id, owner=principal)
            await self.notifications.blocking(subscriptions.renew, session_id, snapshot, owner=principal)
            source = SessionSource(
                LogReader(log, start),
                subscriptions,
                session_id,
                principal,
                holder,
                self.served.lists,
                lambda: self.sessions.alive(session_id, principal),
                self.pump.timer.now,
                lambda uri: self.notifications.resource_topic(uri, principal),
                self.session_check_seconds,
                known=dict(snapshot.since),
                checked_at=self.pump.timer.now(),
            )
            await self.pump.run(send, receive, source.poll, _event_with_id)
        finally:
            try:
                await self.notifications.blocking(subscriptions.release_stream, session_id, holder)
            except SessionStoreError:
                # The lease expires on its own (ttl); a newer stream replaces it anyway.
                logger.warning("GET stream: releasing the lease failed", exc_info=True)
            with contextlib.suppress(OSError, RuntimeError):  # the client is gone: nothing to end
                await end_body(send)

    async def listen(
        self,
        request: HttpRequest,
        message: Request,
        principal: str,
        receive: Any,
        send: Any,
        headers: dict[str, str],
        access: Access | None = None,
    ) -> None:
        """2026 ``subscriptions/listen``: acknowledgement, notifications, a result at the cap.
        ``access``: the caller's view of the deployment's policies, when it has policies."""
        if not request.accepts("text/event-stream"):
            raise HttpError(406, f"{LISTEN_METHOD} answers with an event stream: Accept must include text/event-stream")
        try:
            lists, uris, honoured = await self._honoured(message.params.get("notifications"), principal, access)
        except JsonRpcError as exc:
            status = FORBIDDEN_HTTP_STATUS if exc.code == FORBIDDEN else 400
            await send_json(send, status, error_message(message.id, exc), headers)
            return
        meta: JSONObject = {SUBSCRIPTION_ID_META_KEY: message.id}
        log = self.notifications.log
        topic_of = functools.partial(self.notifications.resource_topic, principal=principal)
        source = ListenSource(LogReader(log, log.cursor(log.clock.now())), lists, uris, topic_of)
        acknowledged: JSONObject = {"_meta": meta, "notifications": honoured}
        try:
            await start_sse(send, headers)
            await chunk(send, sse_event(notification_message("notifications/subscriptions/acknowledged", acknowledged)))
            capped = await self.pump.run(send, receive, source.poll, lambda notice: sse_event(notice.message(meta)))
            if capped:  # the server ends it: the request's result says it ended cleanly
                result: JSONObject = {
                    "resultType": "complete",
                    "_meta": {**meta, SERVER_INFO_META_KEY: self.server_info},
                }
                await chunk(send, sse_event(result_message(message.id if message.id is not None else 0, result)))
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                await end_body(send)

    async def end_session(self, session_id: str) -> None:
        """2025 DELETE: the subscriptions and the lease go; the session's stream ends at its next poll."""
        await self.notifications.blocking(self.notifications.subscriptions.end, session_id)

    async def _honoured(
        self, requested: Any, principal: str, access: Access | None = None
    ) -> tuple[frozenset[str], tuple[str, ...], dict[str, Any]]:
        """The filter's subset this server honours (what the acknowledgement reports): of the
        resources, those ``principal`` may read (each read once, concurrently). A resource the
        policies forbid it to read raises their refusal (:func:`~mcp_platform.protocol.access.forbidden`)."""
        if not isinstance(requested, dict):
            raise JsonRpcError(INVALID_PARAMS, f"{LISTEN_METHOD} needs params.notifications (an object)")
        honoured: dict[str, Any] = {}
        for flag, kind in FILTER_FLAGS.items():
            value = requested.get(flag, False)
            if not isinstance(value, bool):
                raise JsonRpcError(INVALID_PARAMS, f"notifications.{flag} must be a boolean")
            if value and kind in self.served.lists:
                honoured[flag] = True
        uris: tuple[str, ...] = ()
        wanted = requested.get("resourceSubscriptions")
        if wanted is not None:
            if not isinstance(wanted, list) or not all(isinstance(uri, str) for uri in wanted):
                raise JsonRpcError(INVALID_PARAMS, "notifications.resourceSubscriptions must be a list of URIs")
            readable = self.served.readable
            if readable is not None:
                limit = self.notifications.subscriptions.max_per_session
                candidates = list(dict.fromkeys(uri for uri in wanted if _well_formed(uri)))[:limit]
                if access is not None:
                    for uri in candidates:  # what the policies forbid reading is not listened to either
                        access.require(READ_RESOURCE, uri)
                allowed = await asyncio.gather(*(readable(uri, principal) for uri in candidates))
                uris = tuple(uri for uri, ok in zip(candidates, allowed, strict=True) if ok)
                honoured["resourceSubscriptions"] = list(uris)
        lists = frozenset(FILTER_FLAGS[flag] for flag in honoured if flag in FILTER_FLAGS)
        return lists, uris, honoured


def _well_formed(uri: str) -> bool:
    try:
        check_uri(uri)
    except ValueError:
        return False
    return True


def _event_with_id(notice: Notice) -> bytes:
    """2025: the log sk is the event id, the cursor a reconnecting client resumes after."""
    return b"id: " + notice.sk.encode() + b"\n" + sse_event(notice.message())
