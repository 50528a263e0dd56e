"""ASGI request reading and response writing, plus SSE framing (S2, S3)."""

from __future__ import annotations

import asyncio
from typing import Any

from mcp_platform.protocol import compact_json
from mcp_platform.protocol.jsonrpc import INVALID_REQUEST, PARSE_ERROR, JsonRpcError, error_message

Scope = dict[str, Any]
Headers = list[tuple[bytes, bytes]]

SSE_HEADERS: Headers = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


class HttpError(Exception):
    """A transport-level refusal: an HTTP status with a JSON-RPC error body (id null)."""

    def __init__(
        self,
        status: int,
        message: str,
        code: int = INVALID_REQUEST,
        headers: dict[str, str] | None = None,
        data: Any = None,
        request_id: Any = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error = JsonRpcError(code, message, data)
        self.headers = headers or {}
        self.request_id = request_id
        """The id of the refused request when it could be read (JSON-RPC: echo it)."""


REFUSED = ("q=0", "q=0.0", "q=0.00", "q=0.000")  # RFC 9110: q=0 means "not acceptable"
_JSON_ONLY = frozenset({"application/json"})


class HttpRequest:
    """The parts of an ASGI HTTP scope the transport reads (header names lower-cased)."""

    __slots__ = ("_accepted", "_raw_headers", "client_host", "has_repeats", "headers", "method", "path")

    def __init__(self, scope: Scope) -> None:
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self._raw_headers: Headers = scope.get("headers", [])
        self.headers: dict[str, str] = {
            _header_name(name): value.decode("latin-1") for name, value in self._raw_headers
        }
        self.has_repeats = len(self.headers) != len(self._raw_headers)
        """Some header name appears more than once (the last value is in ``headers``)."""
        client = scope.get("client")
        self.client_host: str = client[0] if client else ""
        self._accepted = _accepted_ranges(self.headers.get("accept", ""))
        """The media ranges the Accept header admits, read once for every ``accepts``."""

    def count(self, name: str) -> int:
        if not self.has_repeats:
            return 1 if name in self.headers else 0
        return sum(1 for key, _ in self._raw_headers if _header_name(key) == name)

    def accepts(self, media_type: str) -> bool:
        """Whether the Accept header admits ``media_type``."""
        major = media_type.split("/")[0]
        return media_type in self._accepted or f"{major}/*" in self._accepted or "*/*" in self._accepted

    def values(self, name: str) -> list[str]:
        """Every value of a header, in order (one, mostly)."""
        if not self.has_repeats:
            return [self.headers[name]] if name in self.headers else []
        return [value.decode("latin-1") for key, value in self._raw_headers if _header_name(key) == name]


def _header_name(raw: bytes) -> str:
    """A header name as the transport compares it: decoded and lower-cased."""
    return raw.decode("latin-1").lower()


def _accepted_ranges(accept: str) -> frozenset[str]:
    """The media ranges an Accept header lists without refusing them (``q=0``); JSON alone
    when there is no Accept."""
    if not accept:
        return _JSON_ONLY
    ranges = set()
    for part in accept.split(","):
        kind, *params = (piece.strip().lower() for piece in part.split(";"))
        if kind and not any(p.replace(" ", "") in REFUSED for p in params):
            ranges.add(kind)
    return frozenset(ranges)


async def read_body(receive: Any, limit: int, declared: str | None, timeout_seconds: float | None = None) -> bytes:
    """Read the whole body, refusing (413) anything over ``limit`` before buffering it, and (408)
    a body still incomplete ``timeout_seconds`` after reading began: uvicorn waits for a declared
    Content-Length indefinitely, so a client that sends less would hold the connection forever.
    The 408 closes the connection (the unread rest of the body cannot be skipped)."""
    if declared is not None:
        try:
            if int(declared) > limit:
                raise HttpError(413, f"Request body exceeds {limit} bytes")
        except ValueError as exc:
            raise HttpError(400, "Invalid Content-Length") from exc
    chunks: list[bytes] = []
    size = 0
    # One deadline for the whole body, from when reading began (None: no limit).
    deadline = None if timeout_seconds is None else asyncio.get_running_loop().time() + timeout_seconds
    while True:
        budget = asyncio.timeout_at(deadline)
        try:
            async with budget:
                message = await receive()
        except TimeoutError as exc:
            if not budget.expired():
                raise
            raise HttpError(
                408, f"Request body not received within {timeout_seconds:g} s", headers={"connection": "close"}
            ) from exc
        if message["type"] == "http.disconnect":
            raise HttpError(400, "Client disconnected before the body was read")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise HttpError(413, f"Request body exceeds {limit} bytes")
        if not message.get("more_body", False):
            return b"".join((*chunks, chunk)) if chunks else chunk  # usually one message: no copy
        chunks.append(chunk)


MAX_JSON_DEPTH = 64
"""Nesting levels a request body may have (the message object is level 1). Checked where the
body is parsed, before anything reads it, so nothing downstream (digests, admission, the
standard library's encoder) recurses deeper on client data."""


def decode_json(body: bytes) -> Any:
    """The body's JSON document; 400 for one that is not JSON (-32700), or that nests deeper
    than :data:`MAX_JSON_DEPTH` or repeats a key within an object (-32600: which member
    counts would be a guess, and a proxy may have guessed otherwise)."""
    try:
        document = compact_json.loads(body)
    except UnicodeDecodeError as exc:
        raise HttpError(400, "Request body is not valid UTF-8", PARSE_ERROR) from exc
    except (ValueError, RecursionError) as exc:
        raise HttpError(400, "Parse error: request body is not valid JSON", PARSE_ERROR) from exc
    if _nested_deeper_than(body, document, MAX_JSON_DEPTH):
        raise HttpError(400, f"Request body nests deeper than {MAX_JSON_DEPTH} levels", request_id=_id_of(document))
    repeated = compact_json.repeated_key(body, document)
    if repeated is not None:
        raise HttpError(
            400, f"Request body repeats the key {_clip(repeated)} within one object", request_id=_id_of(document)
        )
    return document


def _nested_deeper_than(body: bytes, document: Any, limit: int) -> bool:
    """Level by level, not recursively (a recursive walk is what the limit prevents); skipped
    for a body with fewer brackets than the limit, which cannot nest that deep."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    level = [document] if type(document) is dict or type(document) is list else []
    depth = 1
    while level:
        if depth > limit:
            return True
        inner = []
        for container in level:
            for child in container.values() if type(container) is dict else container:
                if type(child) is dict or type(child) is list:  # type(): JSON gives no subclasses
                    inner.append(child)
        level, depth = inner, depth + 1
    return False


def _id_of(document: Any) -> Any:
    """The refused request's id, when it has a valid one (echoed in the error)."""
    request_id = document.get("id") if isinstance(document, dict) else None
    return request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None


def _clip(key: str, limit: int = 40) -> str:
    return repr(key if len(key) <= limit else key[:limit] + "...")


dumps = compact_json.dumps  # a JSON-RPC message as response bytes


def sse_event(message: dict[str, Any]) -> bytes:
    return b"event: message\ndata: " + dumps(message) + b"\n\n"


def _headers(extra: dict[str, str] | None) -> Headers:
    if not extra:
        return []
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in extra.items()]


async def send_json(
    send: Any, status: int, body: dict[str, Any], headers: dict[str, str] | None = None, *, more_body: bool = False
) -> None:
    """``more_body=True`` leaves the response open (the caller ends it with :func:`end_body`);
    the Content-Length already tells the client it has the whole answer."""
    payload = dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *_headers(headers),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload, "more_body": more_body})


async def end_body(send: Any) -> None:
    """The response's last ASGI message: behind the Web Adapter the invocation ends with it."""
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def send_empty(send: Any, status: int, headers: dict[str, str] | None = None) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-length", b"0"), *_headers(headers)]}
    )
    await send({"type": "http.response.body", "body": b""})


async def send_http_error(send: Any, error: HttpError) -> None:
    await send_json(send, error.status, error_message(error.request_id, error.error), error.headers)


async def start_sse(send: Any, headers: dict[str, str] | None = None) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *_headers(headers)]})
