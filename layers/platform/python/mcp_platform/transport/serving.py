"""The served HTTP stack: the one definition of how uvicorn serves the endpoint app, wherever it
runs: on Lambda behind the Web Adapter (``run.sh``: ``python3 -m mcp_platform.transport.serving``), in
the local platform (``make dev``) and the conformance instances (``local/endpoint.py``), and in the
tests and benchmarks.

uvicorn's httptools protocol bounds nothing before the app sees a request: it buffers a header
block of any size and any number of headers, and arms no timer before the first response (its
keep-alive timer), so a connection that sends nothing, or a header byte now and then, is held
open for ever. ``GuardedHttpToolsProtocol`` adds both bounds to it:

- the header block (request line and headers) is at most ``MAX_HEADER_BLOCK_BYTES`` and
  ``MAX_HEADER_COUNT`` headers, else 431 and the connection is closed;
- a header block must be complete ``HEADER_READ_TIMEOUT_S`` after the connection opened (or,
  on a kept-alive connection, after the next request's first byte arrived), whatever trickles
  in meanwhile, else 408 (a connection that sent nothing is closed without an answer: a client
  that opened it ahead of use must not read a 408 as the answer to a later request).
  Between requests uvicorn's keep-alive timer applies, and the body has its own deadline in the
  app (``MCP_BODY_TIMEOUT_SECONDS``).

Why httptools with a guard rather than h11 or another server: the decision record ("The HTTP
stack", docs/architecture/decisions.md) keeps what ``make bench`` measured.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from typing import ClassVar

import httptools
import uvicorn
from uvicorn._types import ASGIApplication
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

MAX_HEADER_BLOCK_BYTES = 64 * 1024
"""Request line and headers together. Generous for bearer tokens (an OAuth JWT is a few KiB);
what Node.js (16 KiB) and nginx (4 x 8 KiB) accept by default fits."""
MAX_HEADER_COUNT = 100
"""Apache's default; an MCP client sends about a dozen."""
HEADER_READ_TIMEOUT_S = 10.0
"""From the connection's opening (or the next request's first byte) to the end of its headers;
the same 10 s the body gets by default (``MCP_BODY_TIMEOUT_SECONDS``)."""
KEEP_ALIVE_TIMEOUT_S = 65
"""Idle time between requests, above the Function URL's idle timeout (as run.sh always had it)."""


@dataclass(frozen=True)
class HeaderLimits:
    max_block_bytes: int = MAX_HEADER_BLOCK_BYTES
    max_count: int = MAX_HEADER_COUNT
    read_timeout_s: float = HEADER_READ_TIMEOUT_S


DEFAULT_LIMITS = HeaderLimits()


class HeaderBlockTooLarge(Exception):
    """Raised from a parser callback: httptools stops parsing and raises an
    ``HttpParserCallbackError`` whose ``__context__`` is this."""


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bounded header block and a header read timeout."""

    limits: ClassVar[HeaderLimits] = DEFAULT_LIMITS

    # Per-connection state, set in connection_made (uvicorn builds one protocol per connection).
    _awaiting_headers: bool
    """The next bytes belong to a header block: from the opening, and after each request's body."""
    _block_begun: bool
    """The awaited block's request line began (a timeout then answers 408 rather than closing)."""
    _parsed_bytes: int
    """Of the current block: the target and the header names and values the parser handed over."""
    _received_bytes: int
    """Of the current block: the whole of each chunk that ended inside it (covers a name or value
    the parser is still accumulating, which no callback has shown yet)."""
    _header_count: int
    _blocks_completed: int
    _header_deadline: asyncio.TimerHandle | None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._awaiting_headers = True
        self._blocks_completed = 0
        self._begin_block()
        self._header_deadline = self.loop.call_later(self.limits.read_timeout_s, self._header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """uvicorn's, with the byte count of an incomplete block, the header deadline of a
        kept-alive connection's next request, and 431 for a block over the limits."""
        began_inside_block = self._awaiting_headers
        if began_inside_block and self._header_deadline is None:  # the next request on a kept-alive connection
            self._header_deadline = self.loop.call_later(self.limits.read_timeout_s, self._header_timeout)
        blocks_before = self._blocks_completed
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as error:
            if isinstance(error.__context__, HeaderBlockTooLarge):
                self._refuse(431, "Request header fields too large.")
            else:
                self._invalid_request()
        except httptools.HttpParserError:
            self._invalid_request()
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        else:
            # The whole chunk belongs to one block only if no block ended in it (a chunk may carry
            # a whole request, body included, and end awaiting the next one).
            if began_inside_block and self._blocks_completed == blocks_before:
                self._received_bytes += len(data)
                if self._received_bytes > self.limits.max_block_bytes:
                    self._refuse(431, "Request header fields too large.")

    def on_message_begin(self) -> None:
        self._block_begun = True  # a request line has begun (empty lines before one do not count)
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._parsed_bytes += len(url)
        if self._parsed_bytes > self.limits.max_block_bytes:
            raise HeaderBlockTooLarge
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        self._parsed_bytes += len(name) + len(value) + 4  # ": " and CRLF
        if self._header_count > self.limits.max_count or self._parsed_bytes > self.limits.max_block_bytes:
            raise HeaderBlockTooLarge
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._awaiting_headers = False
        self._blocks_completed += 1
        self._begin_block()
        self._cancel_header_deadline()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._awaiting_headers = True  # what follows a request on the wire is the next one's headers
        super().on_message_complete()

    def _begin_block(self) -> None:
        self._block_begun = False
        self._parsed_bytes = self._received_bytes = self._header_count = 0

    def _cancel_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _header_timeout(self) -> None:
        self._header_deadline = None
        if self.transport.is_closing():
            return
        if self._block_begun:
            self._refuse(408, "Request header timeout.")
        else:
            self.transport.close()

    def _invalid_request(self) -> None:
        message = "Invalid HTTP request received."
        self.logger.warning(message)
        self.send_400_response(message)

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` and close, as uvicorn answers an invalid request (400); only close when
        an earlier request's response is still being written (pipelining), which must not be cut."""
        self.logger.warning("%s (%d)", message, status)
        if self.cycle is not None and not self.cycle.response_complete:
            self.transport.close()
            return
        body = message.encode("ascii")
        content = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content += [name, b": ", value, b"\r\n"]
        content += [
            b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
            b"connection: close\r\n\r\n",
            body,
        ]
        self.transport.write(b"".join(content))
        self.transport.close()


def guarded_protocol(limits: HeaderLimits) -> type[GuardedHttpToolsProtocol]:
    """The protocol class with ``limits`` (uvicorn instantiates the class it is given)."""
    if limits == DEFAULT_LIMITS:
        return GuardedHttpToolsProtocol
    return type("GuardedHttpToolsProtocol", (GuardedHttpToolsProtocol,), {"limits": limits})


def server_config(
    app: ASGIApplication | str,
    *,
    host: str,
    port: int,
    limits: HeaderLimits = DEFAULT_LIMITS,
    log_level: str | None = None,
) -> uvicorn.Config:
    """uvicorn's configuration for the endpoint (``app``: the app or its ``module:attribute``)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        # On SIGTERM (about 300 ms before Lambda's SIGKILL) the app flushes buffered tool events.
        lifespan="on",
        access_log=False,
        server_header=False,
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT_S,
        # The httptools parser and uvloop, named rather than "auto": a layer without them fails
        # at start instead of silently serving on the slower pure-Python stack.
        http=guarded_protocol(limits),
        loop="uvloop",
        log_level=log_level,
    )


def main(argv: list[str] | None = None) -> None:
    """``python -m mcp_platform.transport.serving module:app --host H --port P`` (run.sh)."""
    parser = argparse.ArgumentParser(prog="python -m mcp_platform.transport.serving", description=main.__doc__)
    parser.add_argument("app", help="the ASGI app as module:attribute")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    server = uvicorn.Server(server_config(args.app, host=args.host, port=args.port))
    server.run()
    if not server.started:
        sys.exit(3)  # uvicorn's own exit status for a failed start


if __name__ == "__main__":
    main()
