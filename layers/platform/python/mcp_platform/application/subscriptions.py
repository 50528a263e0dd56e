"""2025 ``resources/subscribe`` / ``resources/unsubscribe`` (stack option ``subscriptions``).

Registered only when subscriptions are on and there are resources (otherwise -32601 like any
unknown method), and only in the 2025 era: 2026-07-28 removed both (``subscriptions/listen``
carries the URIs instead). The transport has already checked that the caller owns the live
``Mcp-Session-Id`` session (404 otherwise); the set is stored with it, for whichever instance
holds the session's GET stream (``notifications.ports.SubscriptionStore``). A URI is
subscribed to only if the caller may read it, and the log keeps a private resource's updates
per principal (:func:`audience`), so no stream hears of what its principal could not read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp_platform.application.effects import store_error
from mcp_platform.application.notifications import Notifications
from mcp_platform.application.notifications.ports import TooManySubscriptions, check_uri
from mcp_platform.application.sessions.errors import StoreUnavailable
from mcp_platform.protocol.access import READ_RESOURCE
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.features import Feature, Handler, resource_not_found
from mcp_platform.protocol.jsonrpc import INVALID_PARAMS, LIMIT_EXCEEDED, JsonRpcError, Request
from mcp_platform.protocol.request_context import RequestContext

Readable = Callable[[str, str], Awaitable[bool]]
"""(uri, principal) -> whether that principal's ``resources/read`` of it would answer it."""


def audience(catalog: Catalog, uri: str, principal: str) -> str:
    """Who hears of an update of ``uri`` announced by (or listened for by) ``principal``
    (``notifications.Audience``): every subscriber for a resource declared with cache scope
    ``public`` (it reads the same for every caller), else that principal alone -- the default
    scope is ``private``, and a URI no resource serves is treated as private too."""
    fixed = catalog.resources.get(uri)
    if fixed is not None:
        scope = fixed.cache[1]
    else:
        found = catalog.find_template(uri)
        scope = found[0].cache[1] if found is not None else "private"
    return "" if scope == "public" else principal


class SubscriptionsFeature(Feature):
    """Built when subscriptions are on and there are resources: ``subscribe`` is advertised in
    the resources capability (beside the resources feature's ``listChanged``), and the two
    methods are served in the 2025 era."""

    capability_key = "resources"

    def __init__(self, notifications: Notifications, readable: Readable) -> None:
        self.notifications = notifications
        self.readable = readable

    def capability(self, modern: bool) -> dict[str, Any]:
        return {"subscribe": True}

    def legacy_methods(self) -> Mapping[str, Handler]:
        return {"resources/subscribe": self.subscribe, "resources/unsubscribe": self.unsubscribe}

    async def subscribe(self, request: Request, call: RequestContext) -> dict[str, Any]:
        """Authorized exactly as a read: a URI the caller cannot read (another principal's
        session, an unknown one) gets the answer its read would (-32002), and nothing is kept."""
        uri = _uri(request)
        if call.access is not None:
            call.access.require(READ_RESOURCE, uri)  # what the policies forbid reading is not watched either
        if not await self.readable(uri, call.principal):
            raise resource_not_found(uri, modern=False)
        subscriptions = self.notifications.subscriptions
        try:
            await self.notifications.blocking(subscriptions.subscribe, _session(call), uri, owner=call.principal)
        except TooManySubscriptions as exc:
            raise JsonRpcError(LIMIT_EXCEEDED, str(exc), {"limit": "subscriptions", "max": exc.limit}) from exc
        except StoreUnavailable as exc:
            raise store_error(exc) from exc
        return {}

    async def unsubscribe(self, request: Request, call: RequestContext) -> dict[str, Any]:
        uri = _uri(request)
        try:
            await self.notifications.blocking(self.notifications.subscriptions.unsubscribe, _session(call), uri)
        except StoreUnavailable as exc:
            raise store_error(exc) from exc
        return {}


def _uri(request: Request) -> str:
    try:
        return check_uri(request.params.get("uri"))
    except ValueError as exc:
        raise JsonRpcError(INVALID_PARAMS, f"params.uri: {exc}") from exc


def _session(call: RequestContext) -> str:
    if call.transport_session_id is None:  # registered for the 2025 era only, where it is set
        raise JsonRpcError(INVALID_PARAMS, "resources/subscribe needs an Mcp-Session-Id session")
    return call.transport_session_id
