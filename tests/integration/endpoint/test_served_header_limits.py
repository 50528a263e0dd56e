"""The served HTTP stack bounds the header block and the time to receive it (issue 26, item 5),
over raw sockets against an endpoint served as run.sh and the local platform serve it
(``mcp_platform.transport.serving``). The size limits are the shipped constants; the read timeout is
shortened to 1 s by configuration so the tests need no long waits. The last test runs run.sh
itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import SplitResult, urlsplit

import pytest

from mcp_platform.transport.serving import MAX_HEADER_BLOCK_BYTES, MAX_HEADER_COUNT, HeaderLimits
from tests.support.aws import free_port
from tests.support.endpoint import AwsStack, endpoint_instance
from tests.support.features import serve_from_asset
from tests.support.mcp_http import MODERN

pytestmark = pytest.mark.integration

READ_TIMEOUT_S = 1.0
PATIENCE_S = 6.0
"""How long a test waits for the server before calling it a failure: well past the 1 s timeout,
far below the 75 s a connection used to be held."""
ECHO = (
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},'
    b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    b'"io.modelcontextprotocol/clientCapabilities":{}}}}'
)
"""A 2026-07-28 stateless call: answered on any connection, no session needed."""


@pytest.fixture(scope="module")
def served(aws: AwsStack) -> Iterator[SplitResult]:
    with endpoint_instance(aws, limits=HeaderLimits(read_timeout_s=READ_TIMEOUT_S)) as running:
        yield urlsplit(running.url)


def request_head(where: SplitResult, api_key: str, *extra: str) -> bytes:
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: {where.netloc}",
        f"Authorization: Bearer {api_key}",
        "Content-Type: application/json",
        "Accept: application/json",
        f"MCP-Protocol-Version: {MODERN}",
        "Mcp-Method: tools/call",
        "Mcp-Name: echo",
        *extra,
        f"Content-Length: {len(ECHO)}",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def connect(where: SplitResult) -> socket.socket:
    return socket.create_connection((where.hostname, where.port), timeout=PATIENCE_S)


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """One response on a kept-alive connection: (status, body), read by its Content-Length."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a response: {received!r}"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(int(line[15:]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return int(head.split(b" ", 2)[1]), body


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (a reset after its answer ends it too); what
    came if it is still open after PATIENCE_S (``socket.timeout`` from a first read raises)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        if not received:
            raise
    return received


def send_while_reading(where: SplitResult, data: bytes) -> bytes:
    """Send ``data`` from a thread while this one reads: a server that answers and closes early
    resets the sender, and the answer must be read before that."""
    with connect(where) as sock:

        def send() -> None:
            with contextlib.suppress(OSError):  # the server closed: what it answered is read below
                sock.sendall(data)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        received = read_until_closed(sock)
        sender.join(PATIENCE_S)
    return received


def status_of(response: bytes) -> bytes:
    return response.split(b" ", 2)[1] if response.startswith(b"HTTP/1.1 ") else response[:60]


def test_a_16_mib_header_is_answered_431_and_the_connection_closed(served: SplitResult, api_key: str) -> None:
    """Given one header of 16 MiB (the limit is 64 KiB for the whole block), When it is sent,
    Then 431 and the connection is closed (it used to be read whole and answered 200)."""
    huge = "X-Padding: " + "a" * (16 * 1024 * 1024)
    response = send_while_reading(served, request_head(served, api_key, huge) + ECHO)
    assert status_of(response) == b"431", response[:200]


def test_a_header_value_still_arriving_is_refused_431_before_the_timeout(served: SplitResult, api_key: str) -> None:
    """Given a header value that grows to 16 MiB and never ends (no parser callback has seen it
    yet: httptools accumulates a value until the next header begins), Then 431 as soon as the
    received bytes pass the limit, not 408 once the read timeout passes (nor held open)."""
    head = request_head(served, api_key).removesuffix(b"\r\n\r\n") + b"\r\nX-Padding: "
    response = send_while_reading(served, head + b"a" * (16 * 1024 * 1024))
    assert status_of(response) == b"431", response[:200]


def test_100_000_small_headers_are_answered_431(served: SplitResult, api_key: str) -> None:
    """Given 100,000 headers of a few bytes (the limit is 100 headers), Then 431 and closed."""
    many = [f"X-{index}: v" for index in range(100_000)]
    response = send_while_reading(served, request_head(served, api_key, *many) + ECHO)
    assert status_of(response) == b"431", response[:200]


def test_a_block_just_over_the_count_limit_in_one_write_is_431(served: SplitResult, api_key: str) -> None:
    """The count is exact: the eight headers of a request plus MAX_HEADER_COUNT - 8 more pass,
    one more is refused, all arriving in one small chunk."""
    base = request_head(served, api_key).count(b"\r\n") - 2  # the request line and the end
    fits = [f"X-{index}: v" for index in range(MAX_HEADER_COUNT - base)]
    with connect(served) as sock:
        sock.sendall(request_head(served, api_key, *fits) + ECHO)
        assert read_response(sock)[0] == 200
    response = send_while_reading(served, request_head(served, api_key, *fits, "X-One-More: v") + ECHO)
    assert status_of(response) == b"431", response[:200]


def test_a_block_just_under_the_byte_limit_passes_and_just_over_is_431(served: SplitResult, api_key: str) -> None:
    """The limit is on the block's size: 1 KiB under it is answered, 1 KiB over it is refused."""
    base = len(request_head(served, api_key))
    with connect(served) as sock:
        under = "X-Padding: " + "a" * (MAX_HEADER_BLOCK_BYTES - base - 1024)
        sock.sendall(request_head(served, api_key, under) + ECHO)
        assert read_response(sock)[0] == 200
    over = "X-Padding: " + "a" * (MAX_HEADER_BLOCK_BYTES - base + 1024)
    response = send_while_reading(served, request_head(served, api_key, over) + ECHO)
    assert status_of(response) == b"431", response[:200]


def test_a_body_in_the_same_write_as_its_headers_is_not_counted_as_header(served: SplitResult, api_key: str) -> None:
    """Given a request whose 70,000-byte body (over the header limit, over the instance's 64 KiB
    body limit) arrives in one write with its headers, Then the app judges it (413), not the
    header guard (431)."""
    body = b"x" * 70_000
    head = request_head(served, api_key).replace(f"Content-Length: {len(ECHO)}".encode(), b"Content-Length: 70000")
    with connect(served) as sock:
        sock.sendall(head + body)
        status, answer = read_response(sock)
    assert status == 413, answer


@pytest.mark.parametrize("sent", [b"", b"\r\n\r\n"], ids=["nothing", "empty lines"])
def test_a_connection_that_sends_no_request_is_closed_within_the_timeout(served: SplitResult, sent: bytes) -> None:
    """Given a connection that sends nothing, or only the empty lines a server ignores before a
    request line (RFC 9112 2.2), Then the server closes it once the header read timeout passes,
    without an answer (a client that opened it ahead of use must not read one)."""
    with connect(served) as sock:
        opened = time.monotonic()
        sock.sendall(sent)
        try:
            received = read_until_closed(sock)
        except TimeoutError:
            pytest.fail(f"still open after {PATIENCE_S} s (header read timeout {READ_TIMEOUT_S} s)")
        assert received == b""
        assert READ_TIMEOUT_S * 0.9 <= time.monotonic() - opened < PATIENCE_S


def trickle(sock: socket.socket, data: bytes, every_s: float) -> bytes:
    """Send ``data`` a byte at a time, ``every_s`` apart, until the server answers or closes;
    what it sent then (fails after PATIENCE_S, or once the whole of ``data`` went out)."""
    began = time.monotonic()
    for byte in data:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            break
        readable, _, _ = select.select([sock], [], [], every_s)
        if readable:
            return read_until_closed(sock)
        if time.monotonic() - began > PATIENCE_S:
            break
    pytest.fail(f"the server let a header block trickle for {time.monotonic() - began:.1f} s without an answer")


def test_a_header_trickle_is_answered_408_within_the_timeout(served: SplitResult, api_key: str) -> None:
    """Given a header block sent one byte every 0.25 s (each byte well inside the 1 s timeout,
    the block never complete in it), Then 408 and closed about 1 s after the connection opened:
    the deadline is for the whole block, not renewed by each byte."""
    with connect(served) as sock:
        opened = time.monotonic()
        received = trickle(sock, request_head(served, api_key), every_s=0.25)
        assert status_of(received) == b"408", received[:200]
        assert time.monotonic() - opened < READ_TIMEOUT_S + 2.0


def test_a_normal_request_is_answered(served: SplitResult, api_key: str) -> None:
    with connect(served) as sock:
        sock.sendall(request_head(served, api_key) + ECHO)
        status, body = read_response(sock)
    assert status == 200, body
    assert json.loads(body)["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_keep_alive_outlasts_the_header_timeout_between_requests(served: SplitResult, api_key: str) -> None:
    """Given one connection, When a request is answered, the client idles past the header read
    timeout (the keep-alive timeout, 65 s, applies between requests) and sends another, Then
    both are answered on the same connection."""
    with connect(served) as sock:
        sock.sendall(request_head(served, api_key) + ECHO)
        assert read_response(sock)[0] == 200
        time.sleep(READ_TIMEOUT_S * 1.5)
        sock.sendall(request_head(served, api_key) + ECHO)
        assert read_response(sock)[0] == 200


def test_the_next_request_on_a_kept_alive_connection_has_its_own_deadline(served: SplitResult, api_key: str) -> None:
    """Given a kept-alive connection after one answered request, When the next request's header
    trickles, Then 408 about 1 s after its first byte (uvicorn's keep-alive timer stops at the
    first byte, so nothing else would bound it)."""
    with connect(served) as sock:
        sock.sendall(request_head(served, api_key) + ECHO)
        assert read_response(sock)[0] == 200
        began = time.monotonic()
        received = trickle(sock, request_head(served, api_key), every_s=0.25)
        assert status_of(received) == b"408", received[:200]
        assert time.monotonic() - began < READ_TIMEOUT_S + 2.0


RUN_SH = Path(__file__).resolve().parents[3] / "functions" / "endpoint" / "run.sh"


def test_run_sh_serves_the_guarded_stack(aws: AwsStack, tmp_path: Path) -> None:
    """Given the Lambda handler script itself (run.sh, as the Web Adapter starts it) on the
    emulator, in a copy of the endpoint's code serving the platform's own tools, Then a normal
    request is answered and a header block over the count limit is 431: the command there serves
    the same stack as make dev and the tests above."""
    port = free_port()
    root = RUN_SH.parents[2]
    task_root = tmp_path / "endpoint"
    shutil.copytree(RUN_SH.parent, task_root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    serve_from_asset(task_root)
    env = {
        **os.environ,  # the fake credentials of the module's stack
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",  # run.sh's python3: this venv's
        "PYTHONPATH": f"{root / 'layers/platform/python'}:{task_root}",
        "AWS_LWA_PORT": str(port),
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": aws.endpoint_url,
        "SESSION_TABLE_NAME": aws.table,
        "EVENT_STREAM_NAME": aws.stream,
        "PRODUCER_DLQ_URL": aws.dlq_url,
        "MCP_REQUEST_STATE_SECRET_ARN": aws.state_secret,
        "MCP_AUTH": "none",
    }
    log = (tmp_path / "run.log").open("wb")
    run_sh = task_root / RUN_SH.name
    process = subprocess.Popen(["bash", str(run_sh)], env=env, cwd=task_root, stdout=log, stderr=subprocess.STDOUT)
    try:
        where = urlsplit(f"http://127.0.0.1:{port}/mcp")
        deadline = time.monotonic() + 60  # a bound on waiting for the start, not a timing claim
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, (tmp_path / "run.log").read_text()
                assert time.monotonic() < deadline, (tmp_path / "run.log").read_text()
                time.sleep(0.1)
        with connect(where) as sock:
            sock.sendall(request_head(where, "unused") + ECHO)
            status, body = read_response(sock)
            assert status == 200, body
        too_many = [f"X-{index}: v" for index in range(MAX_HEADER_COUNT)]
        response = send_while_reading(where, request_head(where, "unused", *too_many) + ECHO)
        assert status_of(response) == b"431", response[:200]
    finally:
        process.terminate()
        process.wait(15)
        log.close()
