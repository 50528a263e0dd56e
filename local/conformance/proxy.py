"""A round-robin HTTP proxy on loopback, as a Function URL spreads requests over Lambda.

Every request goes to the next instance (never sticky: a 2025 session's GET stream, its POSTs
and its DELETE land on different processes, as they land on different execution environments).
Request and response headers pass through unchanged (Host and Origin included, so the instances'
DNS-rebinding checks see what the client sent; no header is added); response bodies are relayed
chunk by chunk as they arrive, never buffered, and a client that goes away closes the upstream
response, as a disconnect ends an invocation.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import httpx

logger = logging.getLogger(__name__)

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# Hop-by-hop headers (RFC 9110 section 7.6.1) belong to one connection, not to the message.
HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer", b"transfer-encoding", b"upgrade"}
)


class RoundRobinProxy:
    """An ASGI app forwarding each request to the next of ``upstreams`` (base URLs)."""

    def __init__(self, upstreams: Sequence[str], connect_timeout_s: float = 5.0) -> None:
        if not upstreams:
            raise ValueError("a round-robin proxy needs at least one upstream")
        self.upstreams = [url.rstrip("/") for url in upstreams]
        self.counts = [0] * len(self.upstreams)
        self._order = itertools.cycle(range(len(self.upstreams)))
        # No read timeout: an SSE stream stays open as long as the instance keeps it open.
        self._timeout = httpx.Timeout(None, connect=connect_timeout_s)
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._forward(scope, receive, send)
        else:
            raise RuntimeError(f"the proxy serves HTTP only, not {scope['type']!r}")

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._client is not None:
                    await self._client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout, follow_redirects=False)
        return self._client

    async def _forward(self, scope: Message, receive: Receive, send: Send) -> None:
        index = next(self._order)
        self.counts[index] += 1
        body = await _request_body(receive)
        target = self.upstreams[index] + scope["raw_path"].decode("latin-1")
        if scope.get("query_string"):
            target += "?" + scope["query_string"].decode("latin-1")
        # Values without the whitespace around them (RFC 9110 5.5: it is not part of the value, and
        # an intermediary may drop it): httpx's h11 refuses to send a padded value, which turned
        # the suite's "Mcp-Name:  tool  " check into a 502 from here. The instance's own trimming
        # is tested without the proxy (tests/integration/endpoint/test_bad_input_transport.py).
        headers = [(name, value.strip(b" \t")) for name, value in scope["headers"] if name.lower() not in HOP_BY_HOP]
        # httpx.Request, not client.build_request: the client's default headers (Accept,
        # User-Agent, Accept-Encoding) would change what the instance is asked.
        request = httpx.Request(scope["method"], target, headers=headers, content=body)
        try:
            response = await self._http().send(request, stream=True)
        except httpx.HTTPError as error:
            logger.warning("upstream %s unreachable: %r", self.upstreams[index], error)
            await _bad_gateway(send, f"upstream {self.upstreams[index]} unreachable: {error!r}")
            return
        try:
            response_headers = [(n, v) for n, v in response.headers.raw if n.lower() not in HOP_BY_HOP]
            await send({"type": "http.response.start", "status": response.status_code, "headers": response_headers})
            await _relay(response, receive, send, self.upstreams[index])
        finally:
            await response.aclose()


async def _request_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _relay(response: httpx.Response, receive: Receive, send: Send, upstream: str) -> None:
    """Body chunks as they arrive, until the upstream ends or the client disconnects."""

    async def pump() -> None:
        try:
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx.HTTPError as error:
            # The status line has gone out: the truncation reaches the client as an aborted
            # response (the error propagates and the server drops the connection), not as an end.
            logger.warning("upstream %s broke off a response: %r", upstream, error)
            raise
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    relay = asyncio.ensure_future(pump())
    watch = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({relay, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        client_gone = watch.done()
        watch.cancel()
        relay.cancel()  # a no-op once it has finished; else response.aclose() closes the upstream
    try:
        await relay
    except asyncio.CancelledError:
        if not client_gone:
            raise  # this task itself is being cancelled (server shutdown), not only the relay


async def _bad_gateway(send: Send, text: str) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 502, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
