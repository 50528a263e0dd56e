"""2025 revisions: server-to-client requests on a call's SSE stream, answered via any instance.

A question goes out as a JSON-RPC request on the call's own stream (the ``notify`` path of the
streamer), with an id no other request of the session can have (``srv-`` + 128 random bits; the
reply item's ``attribute_not_exists`` guarantees it). The client POSTs its response, 202, to
whichever instance the load balancer picks:

* the same instance (fast path): handed to the waiting call in process, no table write;
* another instance: written into the reply item (a :class:`.ports.ReplyStore`), which the waiting call polls
  with a consistent GetItem, backing off from 50 ms to 1 s, until ``timeout_seconds``: then the
  call ends with a clear error (a tool error result, like any failure the model may act on).

A response for an unknown id, from another principal, or a second one for the same request is
refused (400; an unknown or foreign session is 404 before this). Answers are kept per call and
key, so a read-modify-write tool that runs again after a lost race does not ask twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_platform.application.blocking import IN_THREAD, Blocking
from mcp_platform.application.interactive.digests import question_digest
from mcp_platform.application.interactive.ports import ReplyStore
from mcp_platform.application.sessions.errors import SessionStoreError
from mcp_platform.application.stored_form import STORED_FORM
from mcp_platform.protocol.interactive import InputRequest, InvalidInputResponse, check_answer
from mcp_platform.protocol.jsonrpc import INVALID_REQUEST, JSONObject, JsonRpcError, error_message
from mcp_platform.protocol.request_context import RequestContext, discard_notification
from mcp_platform.protocol.storability import Inadmissible
from mcp_platform.protocol.tools import ToolError

logger = logging.getLogger(__name__)

REQUEST_ID = re.compile(r"srv-[A-Za-z0-9_-]{22}")
MAX_RESPONSE_BYTES = 256 * 1024
"""A response is kept in one reply item (DynamoDB: 400 KB); a larger one is refused."""
REPLY_TTL_MARGIN_SECONDS = 60


class ClientRequestFailed(ToolError):
    """The client answered with an error, with a malformed result, or not in time."""


class ReplyRefused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Waiter:
    owner: str
    future: asyncio.Future[dict[str, Any]]


class ServerRequests:
    """One per process: the calls of this instance waiting for answers, and the receiving side."""

    def __init__(
        self,
        replies: ReplyStore,
        *,
        timeout_seconds: float,
        poll_base_seconds: float = 0.05,
        poll_cap_seconds: float = 1.0,
        blocking: Blocking = IN_THREAD,
    ) -> None:
        self.replies = replies
        self.blocking = blocking
        self.timeout_seconds = timeout_seconds
        self.poll_base_seconds = poll_base_seconds
        self.poll_cap_seconds = poll_cap_seconds
        self._waiting: dict[tuple[str, str], _Waiter] = {}

    def for_call(self, call: RequestContext) -> CallRequests:
        return CallRequests(self, call)

    async def receive(self, session_id: str, message: dict[str, Any], *, owner: str) -> None:
        """A client's JSON-RPC response, posted to this instance; raises ReplyRefused."""
        request_id = message.get("id")
        if not isinstance(request_id, str) or not REQUEST_ID.fullmatch(request_id):
            raise ReplyRefused(400, "No outstanding server request has this id")  # no AWS call for it
        refusal = _inadmissible(message)  # admitted as tool arguments are: a tool may keep it
        waiter = self._waiting.get((session_id, request_id))
        if waiter is not None:
            if waiter.owner != owner or waiter.future.done():
                raise ReplyRefused(400, "No outstanding server request has this id")
            # Fast path: the call waits in this process (for a refused answer, the refusal).
            waiter.future.set_result(message if refusal is None else _refused(request_id, refusal))
            if refusal is not None:
                raise ReplyRefused(400, refusal)
            return
        status, text = 400, ""
        if refusal is None:
            text = json.dumps(message, separators=(",", ":"))
            if len(text) > MAX_RESPONSE_BYTES:
                status, refusal = 413, f"The client's response exceeded {MAX_RESPONSE_BYTES} bytes"
        if refusal is not None:  # the waiting call learns it now instead of at its timeout
            text = json.dumps(_refused(request_id, refusal))
        if not await self.blocking(self.replies.deliver, session_id, request_id, owner=owner, response=text):
            raise ReplyRefused(400, "No outstanding server request has this id")
        if refusal is not None:
            raise ReplyRefused(status, refusal)

    async def exchange(self, call: RequestContext, requests: Mapping[str, InputRequest]) -> dict[str, JSONObject]:
        session_id, owner = str(call.transport_session_id), call.principal
        ids = {key: f"srv-{secrets.token_urlsafe(16)}" for key in requests}
        ttl = math.ceil(self.timeout_seconds) + REPLY_TTL_MARGIN_SECONDS
        loop = asyncio.get_running_loop()
        expected: list[str] = []
        try:
            for key, request in requests.items():
                # Item and waiter exist before the request leaves: no response can precede them.
                self._waiting[(session_id, ids[key])] = _Waiter(owner, loop.create_future())
                await self.blocking(
                    self.replies.expect, session_id, ids[key], owner=owner, method=request.method, ttl_seconds=ttl
                )
                expected.append(ids[key])
            for key, request in requests.items():
                await call.channel.notify({"jsonrpc": "2.0", "id": ids[key], **_traced(request.to_wire(), call)})
            waits = (self._wait(session_id, ids[key], owner, request) for key, request in requests.items())
            responses = await asyncio.gather(*waits)
            pairs = zip(requests.items(), responses, strict=True)
            return {key: _answer(request, response) for (key, request), response in pairs}
        finally:
            for request_id in ids.values():
                self._waiting.pop((session_id, request_id), None)
            await self._discard(session_id, expected)

    async def _wait(self, session_id: str, request_id: str, owner: str, request: InputRequest) -> dict[str, Any]:
        future = self._waiting[(session_id, request_id)].future
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_seconds
        attempt = 0
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                message = f"The client did not answer {request.method} within {self.timeout_seconds:g} s"
                raise ClientRequestFailed(message)
            delay = min(self.poll_base_seconds * 2**attempt, self.poll_cap_seconds, remaining)
            attempt += 1
            await asyncio.wait({future}, timeout=delay)
            if future.done():
                return future.result()
            try:
                text = await self.blocking(self.replies.read, session_id, request_id, owner=owner)
            except SessionStoreError:
                # A missed poll delays the answer by one interval; the deadline still holds.
                logger.warning("reply poll failed; polling again", exc_info=True)
                continue
            if text is not None:
                found: dict[str, Any] = json.loads(text)
                return found

    async def _discard(self, session_id: str, request_ids: list[str]) -> None:
        for request_id in request_ids:
            try:
                await self.blocking(self.replies.discard, session_id, request_id)
            except SessionStoreError:
                # The item expires by its TTL; the call's outcome does not depend on this delete.
                logger.warning("reply item not removed (its TTL will)", exc_info=True)


def _traced(wire: dict[str, Any], call: RequestContext) -> dict[str, Any]:
    """The request with the call's span as its parent in ``params._meta`` (SEP-414), so the
    client's handling of it joins the call's trace; the question's own ``_meta`` is kept."""
    if call.trace is None:
        return wire
    params = wire.get("params") or {}
    meta = params.get("_meta")
    return {**wire, "params": {**params, "_meta": {**(meta if isinstance(meta, dict) else {}), **call.trace.to_meta()}}}


def _inadmissible(message: dict[str, Any]) -> str | None:
    """Why the client's response cannot be kept (see :mod:`mcp_platform.application.stored_form`), or None."""
    try:
        STORED_FORM.measure(message)
    except Inadmissible as exc:
        return f"The client's response cannot be kept: {exc}"
    return None


def _refused(request_id: str, reason: str) -> dict[str, Any]:
    """The error response the waiting call receives in place of a refused answer."""
    return error_message(request_id, JsonRpcError(INVALID_REQUEST, reason))


def _answer(request: InputRequest, response: dict[str, Any]) -> JSONObject:
    if "error" in response:
        error = response["error"] if isinstance(response["error"], dict) else {}
        raise ClientRequestFailed(
            f"The client answered {request.method} with error {error.get('code')}: {error.get('message')}"
        )
    try:
        return check_answer(request.method, response.get("result"), STORED_FORM)
    except InvalidInputResponse as exc:
        raise ClientRequestFailed(f"The client's answer to {request.method} is malformed: {exc}") from exc


class CallRequests:
    """One 2025 call's questions (``api.Interaction``), answered once per key and question."""

    round = 1

    def __init__(self, outbound: ServerRequests, call: RequestContext) -> None:
        self._outbound = outbound
        self._call = call
        self._answers: dict[str, tuple[str, JSONObject]] = {}

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, JSONObject]:
        if self._call.channel.notify is discard_notification or self._call.transport_session_id is None:
            # Only a streamed response can carry a request to the client (Accept: text/event-stream).
            raise JsonRpcError(INVALID_REQUEST, "Asking the client needs the call's SSE stream and a session")
        answers: dict[str, JSONObject] = {}
        todo: dict[str, InputRequest] = {}
        for key, request in requests.items():
            held = self._answers.get(key)
            if held is not None and held[0] == question_digest(request):
                answers[key] = held[1]
            else:
                todo[key] = request
        if todo:
            for key, answer in (await self._outbound.exchange(self._call, todo)).items():
                self._answers[key] = (question_digest(todo[key]), answer)
                answers[key] = answer
        return answers
