"""Host and Origin allow-lists (DNS-rebinding protection, S8 CORS by allow-list)."""

from __future__ import annotations

from urllib.parse import urlsplit

from mcp_platform.protocol.jsonrpc import HEADER_MISMATCH, INVALID_REQUEST
from mcp_platform.transport.messages import HttpError, HttpRequest

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
# Headers a request may carry once. Resolving a repeated one (first or last wins) lets a client
# choose which copy a check sees: an evil Origin ahead of an allowed one, two protocol versions,
# two sessions. Host and Origin are refused 403 with the guard's other refusals; these get 400
# (the routing headers with the 2026 header-mismatch code, as their other mismatches).
SINGLE_VALUED = {
    "authorization": INVALID_REQUEST,
    "mcp-session-id": INVALID_REQUEST,
    "mcp-protocol-version": HEADER_MISMATCH,
    "mcp-method": HEADER_MISMATCH,
    "mcp-name": HEADER_MISMATCH,
}


def check_single_valued(request: HttpRequest) -> None:
    if not request.has_repeats:
        return
    for name, code in SINGLE_VALUED.items():
        if request.count(name) > 1:
            raise HttpError(400, f"{name} header appears more than once", code)


def loopback_hosts(port: int) -> tuple[str, ...]:
    """Host header values a loopback-bound server answers to."""
    return tuple(f"{name}:{port}" for name in LOOPBACK_NAMES) + LOOPBACK_NAMES


class RequestGuard:
    """Refuses (403) a Host outside ``allowed_hosts`` and an Origin outside the allow-list.

    An empty ``allowed_hosts`` accepts any Host (behind a Function URL, AWS routes by host).
    An Origin is accepted when listed in ``allowed_origins`` or when its host is an allowed
    Host; requests without Origin (non-browser clients) pass.
    """

    def __init__(self, allowed_hosts: tuple[str, ...] = (), allowed_origins: tuple[str, ...] = ()) -> None:
        self.allowed_hosts = frozenset(host.lower() for host in allowed_hosts)
        self.allowed_origins = frozenset(origin.rstrip("/").lower() for origin in allowed_origins)

    def check(self, request: HttpRequest) -> None:
        for name in ("host", "origin") if request.has_repeats else ():
            if request.count(name) > 1:
                raise HttpError(403, f"{name} header appears more than once")
        host = request.headers.get("host", "").lower()
        if self.allowed_hosts and host not in self.allowed_hosts:
            raise HttpError(403, "Host not allowed")
        origin = request.headers.get("origin")
        if origin is not None and not self.origin_allowed(origin):
            raise HttpError(403, "Origin not allowed")

    def origin_allowed(self, origin: str) -> bool:
        normalized = origin.rstrip("/").lower()
        if normalized in self.allowed_origins:
            return True
        return bool(self.allowed_hosts) and urlsplit(normalized).netloc in self.allowed_hosts

    def cors_headers(self, request: HttpRequest) -> dict[str, str]:
        origin = request.headers.get("origin")
        if origin is None or not self.origin_allowed(origin):
            return {}
        return {
            "access-control-allow-origin": origin,
            "access-control-expose-headers": "mcp-session-id, mcp-protocol-version, www-authenticate",
            "vary": "Origin",
        }
