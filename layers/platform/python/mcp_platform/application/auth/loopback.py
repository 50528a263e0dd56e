"""``MCP_AUTH=none``: no credentials, accepted only from the loopback interface.

Refused at start-up inside Lambda, where the Web Adapter proxies every request from loopback.
"""

from __future__ import annotations

import functools
import ipaddress

from mcp_platform.application.auth.base import AuthError, Principal

ANONYMOUS = Principal(id="local-anonymous", kind="anonymous")


@functools.lru_cache(maxsize=64)  # a pure function of the peer address, asked on every request
def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class LoopbackAuthenticator:
    async def authenticate(self, headers: dict[str, str], client_host: str) -> Principal:
        if not is_loopback(client_host):
            raise AuthError("Anonymous access is accepted only from loopback", error=None)
        return ANONYMOUS
