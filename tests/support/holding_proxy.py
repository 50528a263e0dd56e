"""An HTTP proxy in front of the local emulator (loopback only) that can hold one AWS operation.

The crash tests make a process die at a named point deterministically: the proxy holds the AWS
call that follows the point (a Kinesis PutRecords, say) until the test has killed the process,
then drops it, so the call never reaches the emulator, exactly as if the process had died before
sending it. The point may lie in the middle of a run of the same call (the third of a batch's
DynamoDB transactions): the calls before it are forwarded, counted, and the next one is held.
Everything else is forwarded as it came, byte for byte.
"""

from __future__ import annotations

import contextlib
import http.client
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from tests.support.aws import free_port

PUT_RECORDS = "Kinesis_20131202.PutRecords"
PUT_RECORD = "Kinesis_20131202.PutRecord"
TRANSACT_WRITE_ITEMS = "DynamoDB_20120810.TransactWriteItems"
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class HoldingProxy:
    """Forwards to ``upstream``; while :meth:`hold` is on, requests for that operation (the
    ``X-Amz-Target`` header) wait, once the number it lets through has passed, and are dropped
    when :meth:`drop_held` is called."""

    def __init__(self, upstream: str) -> None:
        self._upstream = urlsplit(upstream)
        self._lock = threading.Lock()
        self._target: str | None = None
        self._let_through = 0
        self._released = threading.Event()
        self._arrived = threading.Condition(self._lock)
        self.held = 0
        self.passed = 0  # requests for the held operation forwarded since hold()
        self.port = free_port()
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="holding-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def hold(self, target: str, *, after: int = 0) -> None:
        """Holds ``target`` requests from the one after the first ``after`` (forwarded) on."""
        with self._lock:
            self._target, self._let_through, self.held, self.passed = target, after, 0, 0
            self._released.clear()

    def wait_held(self, count: int, timeout_s: float) -> None:
        """Until ``count`` requests are being held (bounded)."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: self.held >= count, timeout=timeout_s):
                raise AssertionError(f"{self.held} of {count} {self._target} requests held after {timeout_s} s")

    def drop_held(self) -> None:
        """Stop holding: what was held is dropped, never forwarded."""
        with self._lock:
            self._target = None
        self._released.set()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._forward()

            def do_POST(self) -> None:
                self._forward()

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with proxy._lock:
                    held = proxy._target is not None and self.headers.get("X-Amz-Target") == proxy._target
                    if held and proxy.passed < proxy._let_through:
                        proxy.passed, held = proxy.passed + 1, False
                    elif held:
                        proxy.held += 1
                        proxy._arrived.notify_all()
                if held:
                    proxy._released.wait()
                    self.close_connection = True  # dropped: the caller is dead by now
                    return
                upstream = http.client.HTTPConnection(proxy._upstream.hostname, proxy._upstream.port, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    data = answer.read()
                finally:
                    upstream.close()
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.drop_held()
        self._server.shutdown()
        self._server.server_close()


@contextlib.contextmanager
def holding_proxy(upstream: str) -> Iterator[HoldingProxy]:
    proxy = HoldingProxy(upstream)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
