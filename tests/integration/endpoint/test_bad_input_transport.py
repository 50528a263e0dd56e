"""Regression tests of issue 12 over HTTP, findings 5, 7 and 8: repeated security headers are
refused, a body that never arrives does not hold the connection, and one cheap request cannot
pin an instance (a declared time limit; a 2025 disconnect cancels the streamed call).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support import probe_tools
from tests.support.endpoint import AwsStack, Instance, endpoint_instance
from tests.support.hostile import tool_answer
from tests.support.mcp_http import MODERN, headers, initialize
from tests.support.probe_tools.probe import OUTCOMES

pytestmark = pytest.mark.integration

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def raw_exchange(where: Any, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection and read until the server closes it."""
    with socket.create_connection((where.hostname, where.port), timeout=15) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


# -- finding 5: duplicate security headers are refused, never resolved last-wins ---------------------
GOOD_ORIGIN = "http://good.example"


@pytest.fixture(scope="module")
def with_origins(aws: AwsStack) -> Iterator[Instance]:
    with endpoint_instance(aws, MCP_ALLOWED_ORIGINS=GOOD_ORIGIN) as running:
        yield running


def test_f5_an_evil_origin_followed_by_an_allowed_one_is_403_without_cors(with_origins: Instance, api_key: str) -> None:
    listed = [*headers(api_key).items(), ("Origin", "http://evil.example"), ("Origin", GOOD_ORIGIN)]
    response = httpx.post(with_origins.url, headers=listed, json=PING)
    assert response.status_code == 403 and "access-control-allow-origin" not in response.headers


@pytest.mark.parametrize(
    ("name", "values", "status"),
    [
        ("MCP-Protocol-Version", ("2025-11-25", "2025-06-18"), 400),
        ("MCP-Protocol-Version", (MODERN, MODERN), 400),
        ("Mcp-Session-Id", ("a", "b"), 400),
        ("Mcp-Method", ("ping", "ping"), 400),
        ("Mcp-Name", ("echo", "echo"), 400),
        ("Authorization", ("Bearer a", "Bearer b"), 400),
    ],
)
def test_f5_a_repeated_security_header_is_refused(
    instance: Instance, api_key: str, name: str, values: tuple[str, str], status: int
) -> None:
    base = {k: v for k, v in headers(api_key).items() if k.lower() != name.lower()}
    if name == "Mcp-Session-Id":
        values = (initialize(instance.url, api_key), initialize(instance.url, api_key))
    if name == "Authorization":
        values = (f"Bearer {api_key}", f"Bearer {api_key}")
    listed = [*base.items(), *((name, value) for value in values)]
    response = httpx.post(instance.url, headers=listed, json=PING)
    assert response.status_code == status, response.text
    assert name.lower() in response.json()["error"]["message"].lower()


def test_f5_a_repeated_host_never_reaches_a_handler(instance: Instance, api_key: str) -> None:
    """Two Host headers (clients such as httpx refuse to send them: a raw socket does). uvicorn's
    h11 parser refuses them itself (400); a parser that lets them through meets the guard (403)."""
    where = urlsplit(instance.url)
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {where.netloc}\r\nHost: evil.example\r\nAuthorization: Bearer {api_key}\r\n"
        f"Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    status = raw_exchange(where, head.encode() + body).split(b" ", 2)[1]
    assert status in (b"400", b"403")


def test_a_standard_header_padded_with_whitespace_is_read_without_it(instance: Instance, api_key: str) -> None:
    """SEP-2243 with RFC 9110 5.5: the whitespace around a field value is not part of it, so
    ``Mcp-Name:   echo  `` names echo. Sent on a raw socket: httpx (h11) refuses to send such a
    value, which is also why the conformance proxy trims it before forwarding."""
    where = urlsplit(instance.url)
    body = (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},'
        b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        b'"io.modelcontextprotocol/clientCapabilities":{}}}}'
    )
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {where.netloc}\r\nAuthorization: Bearer {api_key}\r\n"
        f"Content-Type: application/json\r\nAccept: application/json\r\nMCP-Protocol-Version: {MODERN}\r\n"
        f"Mcp-Method: tools/call\r\nMcp-Name: \t  echo \t \r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    response = raw_exchange(where, head.encode() + body)
    assert response.split(b" ", 2)[1] == b"200", response[:300]
    assert b'"text":"hi"' in response and b'"isError":false' in response


# -- finding 7: a body that never arrives does not hold the connection ------------------------------
def test_f7_a_short_body_is_answered_408_and_the_connection_closed(aws: AwsStack, api_key: str) -> None:
    """Given Content-Length 100 and 10 bytes sent, Then 408 once the body timeout (1 s here,
    MCP_BODY_TIMEOUT_SECONDS) passes, and the server closes the connection."""
    with endpoint_instance(aws, MCP_BODY_TIMEOUT_SECONDS="1") as running:
        where = urlsplit(running.url)
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: {where.netloc}\r\nAuthorization: Bearer {api_key}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            "Content-Length: 100\r\n\r\n"
        )
        received = raw_exchange(where, head.encode() + b'{"jsonrpc"')  # ends when the server closes
        assert received.startswith(b"HTTP/1.1 408"), received[:200]
        assert httpx.get(running.url.replace("/mcp", "/healthz")).status_code == 200


# -- finding 8: one cheap request cannot pin an instance ---------------------------------------------
def test_f8_countdown_refuses_work_past_its_declared_limit(instance: Instance, api_key: str) -> None:
    """countdown accepted 100 steps x 10 s (1,000 s against the 840 s cap): now an isError
    result naming its limit, answered at once."""
    answer = tool_answer(instance, api_key, 2, "countdown", {"steps": 100, "interval_ms": 10_000})
    assert answer["result"]["isError"] and "max_seconds" in answer["result"]["content"][0]["text"]


def test_f8_a_2025_client_that_disconnects_cancels_its_streamed_call(aws: AwsStack, api_key: str) -> None:
    """Given a 2025 streamed tools/call (the probe runs ~3 s), When the client closes the stream
    after the first progress event, Then the call is cancelled (it used to run to the end)."""
    tag = "disconnect-2025"
    with endpoint_instance(aws, extra_tools=(probe_tools,)) as running:
        session_id = initialize(running.url, api_key)
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "probe", "arguments": {"tag": tag}, "_meta": {"progressToken": "p"}},
        }
        request_headers = headers(api_key, **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"})
        with httpx.stream("POST", running.url, headers=request_headers, json=body, timeout=10) as response:
            for chunk in response.iter_raw():
                if b"notifications/progress" in chunk:
                    break  # the client goes away
        deadline = time.monotonic() + 10  # a bound on waiting, not a timing claim
        while time.monotonic() < deadline and OUTCOMES.get(tag) == "started":
            time.sleep(0.05)
        assert OUTCOMES.get(tag) == "cancelled", OUTCOMES.get(tag)
