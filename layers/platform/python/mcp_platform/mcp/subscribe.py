"""2025 ``resources/subscribe`` / ``resources/unsubscribe`` (stack option ``subscriptions``).

Registered only when subscriptions are on and there are resources (otherwise -32601 like any
unknown method), and only in the 2025 era: 2026-07-28 removed both (``subscriptions/listen``
carries the URIs instead). The transport has already checked that the caller owns the live
``Mcp-Session-Id`` session (404 otherwise); the set is stored with it, for whichever instance
holds the session's GET stream (:mod:`mcp_platform.notifications.subscriptions`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp_platform.mcp.call import CallContext
from mcp_platform.mcp.catalog import Catalog
from mcp_platform.mcp.effects import store_error
from mcp_platform.mcp.jsonrpc import INVALID_PARAMS, LIMIT_EXCEEDED, RESOURCE_NOT_FOUND, JsonRpcError, Request
from mcp_platform.notifications import Notifications
from mcp_platform.notifications.log import check_uri
from mcp_platform.notifications.subscriptions import TooManySubscriptions
from mcp_platform.sessions.errors import StoreThrottled


def knows_uri(catalog: Catalog, uri: str) -> bool:
    """A URI this server can read: a fixed resource, or one a template matches."""
    return uri in catalog.resources or catalog.find_template(uri) is not None


class ResourceSubscriptions:
    def __init__(self, catalog: Catalog, notifications: Notifications) -> None:
        self.catalog = catalog
        self.notifications = notifications

    async def subscribe(self, request: Request, call: CallContext) -> dict[str, Any]:
        uri = _uri(request)
        if not knows_uri(self.catalog, uri):
            # Nothing would ever be published for it: refused, not accepted and left silent.
            raise JsonRpcError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})
        subscriptions = self.notifications.subscriptions
        try:
            await asyncio.to_thread(subscriptions.subscribe, _session(call), uri, owner=call.principal)
        except TooManySubscriptions as exc:
            raise JsonRpcError(LIMIT_EXCEEDED, str(exc), {"limit": "subscriptions", "max": exc.limit}) from exc
        except StoreThrottled as exc:
            raise store_error(exc) from exc
        return {}

    async def unsubscribe(self, request: Request, call: CallContext) -> dict[str, Any]:
        uri = _uri(request)
        try:
            await asyncio.to_thread(self.notifications.subscriptions.unsubscribe, _session(call), uri)
        except StoreThrottled as exc:
            raise store_error(exc) from exc
        return {}


def _uri(request: Request) -> str:
    try:
        return check_uri(request.params.get("uri"))
    except ValueError as exc:
        raise JsonRpcError(INVALID_PARAMS, f"params.uri: {exc}") from exc


def _session(call: CallContext) -> str:
    if call.transport_session_id is None:  # registered for the 2025 era only, where it is set
        raise JsonRpcError(INVALID_PARAMS, "resources/subscribe needs an Mcp-Session-Id session")
    return call.transport_session_id
