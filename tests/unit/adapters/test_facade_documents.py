"""Client ID metadata documents: the URL rules, and a fetch bounded in address, size and time
against a document server on loopback that lies, bloats, trickles or redirects (SPEC:
Authorization for every client; MCP authorization, "Client ID Metadata Documents")."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mcp_platform.adapters.document_fetcher import PinnedFetcher, resolve_addresses
from mcp_platform.authorization_server.documents import (
    ClientDocuments,
    DocumentRefused,
    cache_seconds,
    public_address,
)
from mcp_platform.authorization_server.errors import OAuthError
from mcp_platform.authorization_server.urls import BadUrl, check_document_url

TRICKLE_SECONDS = 0.25  # between two bytes of the slow document


class DocumentServer:
    """Serves /<name> documents; each path behaves as its name says."""

    def __init__(self) -> None:
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests += 1
                base = f"http://127.0.0.1:{self.server.server_address[1]}"
                url = base + self.path
                good = {"client_id": url, "client_name": "Doc Client", "redirect_uris": ["http://127.0.0.1:7777/cb"]}
                name = self.path.strip("/").split("?")[0]
                if name in ("good", "cached"):
                    self._send(200, json.dumps(good).encode(), {"cache-control": "max-age=600"})
                elif name == "uncached":
                    self._send(200, json.dumps(good).encode(), {"cache-control": "no-store"})
                elif name == "liar":
                    self._send(200, json.dumps({**good, "client_id": base + "/someone-else"}).encode())
                elif name == "secret":
                    self._send(200, json.dumps({**good, "token_endpoint_auth_method": "client_secret_basic"}).encode())
                elif name == "huge":
                    self._send(200, json.dumps({**good, "padding": "x" * 100_000}).encode())
                elif name == "huge-chunked":
                    self.send_response(200)
                    self.send_header("transfer-encoding", "chunked")
                    self.end_headers()
                    for _ in range(20):
                        chunk = b"x" * 1000
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.write(b"0\r\n\r\n")
                elif name == "slow":
                    body = json.dumps(good).encode()
                    self.send_response(200)
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    with contextlib.suppress(OSError):
                        for byte in body:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(TRICKLE_SECONDS)
                elif name == "redirect":
                    self.send_response(302)
                    self.send_header("location", base + "/good")
                    self.send_header("content-length", "0")
                    self.end_headers()
                elif name == "not-json":
                    self._send(200, b"<html>hello</html>")
                else:
                    self._send(404, b"{}")

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def documents_server() -> Iterator[DocumentServer]:
    server = DocumentServer()
    yield server
    server.stop()


def local_documents(timeout: float = 1.0) -> ClientDocuments:
    return ClientDocuments(PinnedFetcher(allow_loopback=True, timeout_seconds=timeout), allow_loopback=True)


def test_a_document_whose_client_id_is_its_url_is_a_public_client(documents_server: DocumentServer) -> None:
    record = local_documents().client(documents_server.base + "/good")
    assert record.client_id == documents_server.base + "/good"
    assert record.client_name == "Doc Client" and record.redirect_uris == ("http://127.0.0.1:7777/cb",)
    assert record.auth_method == "none" and record.from_document


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("liar", "client_id is not its own URL"),
        ("secret", "token_endpoint_auth_method"),
        ("huge", "larger than 5120 bytes"),
        ("huge-chunked", "larger than 5120 bytes"),
        ("redirect", "HTTP 302"),
        ("not-json", "not JSON"),
        ("missing", "HTTP 404"),
    ],
)
def test_a_document_that_lies_bloats_redirects_or_is_not_json_is_an_invalid_client(
    documents_server: DocumentServer, name: str, reason: str
) -> None:
    with pytest.raises(OAuthError) as refused:
        local_documents().client(f"{documents_server.base}/{name}")
    assert refused.value.error == "invalid_client" and reason in refused.value.description


def test_a_trickling_document_is_cut_at_the_deadline_not_per_read(documents_server: DocumentServer) -> None:
    # Given a server that sends one byte every 0.25 s (each read succeeds well within a socket
    # timeout of 1 s, the whole document would take about 20 s)
    started = time.monotonic()
    # When the facade fetches it with a 1 s budget
    with pytest.raises(OAuthError) as refused:
        local_documents(timeout=1.0).client(documents_server.base + "/slow")
    # Then it gives up at the deadline
    elapsed = time.monotonic() - started
    assert "within 1 s" in refused.value.description
    assert elapsed < 2.0, elapsed


def test_documents_are_cached_for_their_max_age_and_not_at_all_with_no_store(documents_server: DocumentServer) -> None:
    documents = local_documents()
    for _ in range(3):
        documents.client(documents_server.base + "/cached")
        documents.client(documents_server.base + "/uncached")
    assert documents.fetches == 1 + 3
    assert cache_seconds("public, max-age=86400000") == 24 * 3600
    assert cache_seconds("") == 300 and cache_seconds("no-cache") == 0


def test_outside_local_mode_loopback_and_private_addresses_are_never_fetched() -> None:
    def resolve_to(*addresses: str) -> Any:
        return lambda host, port: list(addresses)

    cases = [
        ("https://127.0.0.1/client.json", ["127.0.0.1"]),
        ("https://internal.example/client.json", ["10.0.0.7"]),
        ("https://metadata.example/client.json", ["169.254.169.254"]),
        ("https://six.example/client.json", ["::1"]),
        ("https://mapped.example/client.json", ["::ffff:192.168.1.1"]),
        ("https://nat64.example/client.json", ["64:ff9b::a9fe:a9fe"]),  # 169.254.169.254 through NAT64
        ("https://mixed.example/client.json", ["93.184.216.34", "10.1.2.3"]),  # one private answer is enough
    ]
    for url, addresses in cases:
        fetcher = PinnedFetcher(resolve=resolve_to(*addresses))
        with pytest.raises(DocumentRefused, match="non-public address"):
            fetcher.fetch(url)
    # And an http URL is refused before any fetch outside local mode.
    with pytest.raises(OAuthError, match="https"):
        ClientDocuments(PinnedFetcher()).client("http://127.0.0.1:9/client.json")


@pytest.mark.parametrize(
    "url",
    [
        "https://client.example",
        "https://client.example/",
        "https://client.example/a#frag",
        "https://user:pw@client.example/a",
        "https://client.example/a/../b",
        "https://client.example/./b",
        "ftp://client.example/a",
        "https://client.example/" + "a" * 2001,
        "https://client.example/a b",
        "https://client.example/a%0Ab",  # a percent-encoded control character
        f"https://{'a' * 64}.example/client.json",  # a DNS label is at most 63 characters
        "https://client..example/client.json",  # an empty label
        "https://.client.example/client.json",
        "https://client.example../client.json",
        "https://" + ".".join(letter * 63 for letter in "abcd") + ".example/client.json",  # 263 > 253
    ],
)
def test_client_id_urls_follow_the_documents_rules(url: str) -> None:
    with pytest.raises(BadUrl):
        check_document_url(url, allow_loopback=False)


def test_client_id_url_with_a_path_and_a_query_is_accepted() -> None:
    assert check_document_url("https://client.example/oauth/client.json?v=2", allow_loopback=False)


@pytest.mark.parametrize(
    "url",
    [f"https://{'a' * 64}.example/client.json", "https://client..example/client.json", "https://.example/client.json"],
    ids=["64-character label", "empty label", "empty first label"],
)
def test_a_client_id_url_whose_host_is_no_dns_name_is_an_invalid_client_before_any_lookup(url: str) -> None:
    # Given the facade's own fetcher, whose resolver would be asked for the host
    looked_up: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return resolve_addresses(host, port)

    documents = ClientDocuments(PinnedFetcher(resolve=resolve))
    # When a client_id URL names a host with an over-long or empty label
    with pytest.raises(OAuthError) as refused:
        documents.client(url)
    # Then it is invalid_client, said before any lookup (an IDNA failure is not a failing dependency)
    assert refused.value.error == "invalid_client" and "label" in refused.value.description
    assert looked_up == [] and documents.fetches == 0


def test_a_resolver_that_cannot_encode_the_host_is_a_refused_document_not_a_failure() -> None:
    def unencodable(host: str, port: int) -> list[str]:
        raise UnicodeError("encoding with 'idna' codec failed (UnicodeError: label too long)")

    with pytest.raises(DocumentRefused, match="does not resolve"):
        PinnedFetcher(resolve=unencodable).fetch("https://client.example/client.json")


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("64:ff9b::a9fe:a9fe", False),  # NAT64 (RFC 6052) of 169.254.169.254, the instance metadata
        ("64:ff9b::7f00:1", False),  # 127.0.0.1
        ("64:ff9b::a00:1", False),  # 10.0.0.1
        ("64:ff9b::c0a8:101", False),  # 192.168.1.1
        ("64:ff9b::808:808", True),  # 8.8.8.8: public through NAT64 as it is without
        ("64:ff9b:1::a00:1", False),  # local-use NAT64 (RFC 8215): never public
        ("64:ff9b:1::808:808", False),
        ("::ffff:a9fe:a9fe", False),  # IPv4-mapped
        ("::ffff:808:808", True),
        ("::a9fe:a9fe", False),  # IPv4-compatible (deprecated, reserved)
        ("::ffff:0:a9fe:a9fe", False),  # IPv4-translated (RFC 2765, reserved)
        ("2002:a9fe:a9fe::1", False),  # 6to4
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),  # Teredo
        ("169.254.169.254", False),
        ("93.184.216.34", True),
        ("2606:4700::6810:84e5", True),
    ],
)
def test_an_ipv6_address_that_embeds_an_ipv4_one_is_as_public_as_the_ipv4_address(address: str, public: bool) -> None:
    assert public_address(address) is public
