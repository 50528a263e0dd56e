"""The conformance run's round-robin proxy: alternation, headers as sent, unbuffered streaming,
and a client disconnect that reaches the instance (two ASGI upstreams on loopback)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from local.conformance.proxy import RoundRobinProxy
from tests.support.servers import serve

pytestmark = [pytest.mark.integration]


class Upstream:
    """An instance stand-in: /echo returns what it received; /stream sends a chunk, waits for
    ``release``, sends another; /hold sends a chunk and waits for the client to go away."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.release = threading.Event()
        self.saw_disconnect = threading.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = scope["path"]
        if path == "/echo":
            headers = [[name.decode(), value.decode()] for name, value in scope["headers"]]
            echoed = json.dumps({"name": self.name, "headers": headers, "body": body.decode()}).encode()
            length = [(b"content-length", str(len(echoed)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": length})
            await send({"type": "http.response.body", "body": echoed})
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-upstream", self.name.encode())]})
        if path == "/stream":
            await send({"type": "http.response.body", "body": b"first\n", "more_body": True})
            for _ in range(500):
                if self.release.is_set():
                    break
                await asyncio.sleep(0.01)
            await send({"type": "http.response.body", "body": b"second\n"})
        elif path == "/hold":
            await send({"type": "http.response.body", "body": b"held\n", "more_body": True})
            if (await receive())["type"] == "http.disconnect":
                self.saw_disconnect.set()
        else:
            await send({"type": "http.response.body", "body": b"ok"})


@contextlib.contextmanager
def proxied() -> Iterator[tuple[str, RoundRobinProxy, list[Upstream]]]:
    upstreams = [Upstream("a"), Upstream("b")]
    with serve(upstreams[0]) as a, serve(upstreams[1]) as b:
        proxy = RoundRobinProxy([a, b])
        with serve(proxy) as base:
            yield base, proxy, upstreams


def test_every_request_goes_to_the_next_instance() -> None:
    with proxied() as (base, proxy, _):
        names = [httpx.post(f"{base}/echo").json()["name"] for _ in range(6)]
    assert names in (["a", "b"] * 3, ["b", "a"] * 3)
    assert abs(proxy.counts[0] - proxy.counts[1]) <= 1


def test_headers_and_body_pass_as_sent_and_nothing_is_added() -> None:
    request = (
        b"POST /echo?x=1 HTTP/1.1\r\nHost: localhost:9\r\nOrigin: http://evil.example\r\n"
        b"X-Dup: one\r\nX-Dup: two\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody"
    )
    with proxied() as (base, _, _upstreams):
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(request)
            raw = b""
            while chunk := sock.recv(65536):
                raw += chunk
    head, _, payload = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    echoed = json.loads(payload)
    assert echoed["body"] == "body"
    assert [h for h in echoed["headers"] if h[0] != "content-length"] == [
        ["host", "localhost:9"],
        ["origin", "http://evil.example"],
        ["x-dup", "one"],
        ["x-dup", "two"],
    ]


def test_a_streamed_body_arrives_chunk_by_chunk() -> None:
    with proxied() as (base, _, upstreams), httpx.stream("POST", f"{base}/stream", timeout=10) as response:
        chunks = response.iter_raw()
        assert next(chunks) == b"first\n"  # while the instance is still holding the rest back
        assert not any(upstream.release.is_set() for upstream in upstreams)
        for upstream in upstreams:
            upstream.release.set()
        assert b"".join(chunks) == b"second\n"


def test_a_client_that_goes_away_closes_the_instance_response() -> None:
    with proxied() as (base, _, upstreams):
        with httpx.stream("POST", f"{base}/hold", timeout=10) as response:
            assert next(response.iter_raw()) == b"held\n"
        # Leaving the block closes the unfinished response's connection.
        deadline = time.monotonic() + 5
        while not any(upstream.saw_disconnect.is_set() for upstream in upstreams) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert any(upstream.saw_disconnect.is_set() for upstream in upstreams)


def test_an_unreachable_instance_is_a_502_naming_it() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"  # bound, not listening: refused
        with serve(Upstream("a")) as live:
            proxy = RoundRobinProxy([live, dead])
            with serve(proxy) as base:  # the readiness probe may land on either
                statuses = {httpx.post(f"{base}/echo").status_code for _ in range(4)}
                answer = next(r for r in (httpx.post(f"{base}/echo") for _ in range(2)) if r.status_code == 502)
    assert statuses == {200, 502}
    assert dead in answer.text
