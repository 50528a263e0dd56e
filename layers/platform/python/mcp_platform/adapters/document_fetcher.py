"""The client ID metadata document fetcher over the network: HTTPS (or loopback HTTP in
development) to the one address that was resolved and checked, bounded in size and time as
``authorization_server.documents`` requires of any ``DocumentFetcher`` (its ports)."""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from mcp_platform.authorization_server.documents import FETCH_SECONDS, MAX_DOCUMENT_BYTES, public_address
from mcp_platform.authorization_server.ports import DocumentRefused, FetchedDocument
from mcp_platform.authorization_server.urls import is_loopback_host

Resolver = Callable[[str, int], list[str]]


def resolve_addresses(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class PinnedFetcher:
    """GET over HTTPS (or loopback HTTP when ``allow_loopback``) to the address that was checked."""

    def __init__(
        self,
        *,
        allow_loopback: bool = False,
        timeout_seconds: float = FETCH_SECONDS,
        max_bytes: int = MAX_DOCUMENT_BYTES,
        resolve: Resolver = resolve_addresses,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.allow_loopback = allow_loopback
        self.timeout_seconds = timeout_seconds
        self.max_bytes = max_bytes
        self.resolve = resolve
        self._monotonic = monotonic

    def fetch(self, url: str) -> FetchedDocument:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        address = self._address(host, port)
        started = self._monotonic()
        try:
            sock = socket.create_connection((address, port), timeout=self.timeout_seconds)
        except OSError as exc:
            raise DocumentRefused(f"the document could not be fetched ({type(exc).__name__})") from exc
        # The deadline covers everything (connect, TLS, headers, body): a socket timeout alone is
        # per read, and a server sending a byte a second would never trip it. The watchdog shuts
        # the connection down when the time is up, which ends whatever read is blocked on it.
        current = [sock]
        watchdog = threading.Timer(max(0.0, self.timeout_seconds - (self._monotonic() - started)), _cut, (current,))
        watchdog.daemon = True
        watchdog.start()
        try:
            if parts.scheme == "https":
                context = ssl.create_default_context()
                current[0] = context.wrap_socket(sock, server_hostname=host)  # certificate checked for the name
            connection = http.client.HTTPConnection(host, port, timeout=self.timeout_seconds)
            connection.sock = current[0]
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            connection.putrequest("GET", target, skip_host=True, skip_accept_encoding=True)
            connection.putheader("Host", parts.netloc)
            connection.putheader("Accept", "application/json")
            connection.putheader("User-Agent", "mcp-platform-oauth-facade")
            connection.endheaders()
            response = connection.getresponse()
            if response.status != 200:
                raise DocumentRefused(f"the document URL answered HTTP {response.status} (redirects are not followed)")
            declared = response.getheader("content-length")
            if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
                raise DocumentRefused(f"the document is larger than {self.max_bytes} bytes")
            body = self._read(response)
            if self._monotonic() - started >= self.timeout_seconds:
                raise DocumentRefused(f"the document did not arrive within {self.timeout_seconds:g} s")
            return FetchedDocument(body, response.getheader("cache-control") or "")
        except DocumentRefused:
            raise
        except (OSError, ValueError, http.client.HTTPException) as exc:
            # Timeouts, refused connections, TLS failures, malformed responses, the watchdog's cut.
            if self._monotonic() - started >= self.timeout_seconds:
                raise DocumentRefused(f"the document did not arrive within {self.timeout_seconds:g} s") from exc
            raise DocumentRefused(f"the document could not be fetched ({type(exc).__name__})") from exc
        finally:
            watchdog.cancel()
            current[0].close()

    def _address(self, host: str, port: int) -> str:
        if self.allow_loopback and is_loopback_host(host):
            return "127.0.0.1" if host == "localhost" else host
        try:
            addresses = self.resolve(host, port)
        except (OSError, ValueError) as exc:
            # ValueError: a name the resolver cannot encode (UnicodeError from the idna codec).
            raise DocumentRefused(f"the document's host does not resolve ({type(exc).__name__})") from exc
        if not addresses:
            raise DocumentRefused("the document's host does not resolve")
        if not all(public_address(address) for address in addresses):
            # One private answer is enough to refuse: the connection must not be steered inside.
            raise DocumentRefused("the document's host resolves to a non-public address")
        return addresses[0]

    def _read(self, response: http.client.HTTPResponse) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = response.read1(1024)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > self.max_bytes:
                raise DocumentRefused(f"the document is larger than {self.max_bytes} bytes")
            chunks.append(chunk)


def _cut(current: list[socket.socket]) -> None:
    # Already closed, or detached while being wrapped: then the socket timeout still bounds it.
    with contextlib.suppress(OSError):
        current[0].shutdown(socket.SHUT_RDWR)
