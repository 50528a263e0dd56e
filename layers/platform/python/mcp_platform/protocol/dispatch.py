"""The dispatch table: which method serves a request, per protocol era, and what is advertised.

Built from features (:class:`~mcp_platform.protocol.features.Feature`): the catalog's own
(tools, resources, prompts, completion) and those the application adds (subscriptions, tasks,
the 2025 log level). Capabilities are derived from what is registered, so nothing is advertised
that is not served. Method sets differ per era: ``initialize`` (answered here, stored by the
transport), ``ping`` and ``logging/setLevel`` exist only in the 2025 revisions;
``server/discover`` only in 2026-07-28, where every result also carries ``resultType`` and the
server's identity (:meth:`Dispatch.finish`), and list results carry ``ttlMs``/``cacheScope``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mcp_platform.protocol.features import Binder, Feature, Handler
from mcp_platform.protocol.handshake import Initialized, transport_session_attributes
from mcp_platform.protocol.jsonrpc import METHOD_NOT_FOUND, JSONObject, JsonRpcError, Request
from mcp_platform.protocol.pagination import LIST_TTL_MS
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.protocol.storability import Storability
from mcp_platform.protocol.versions import MODERN_VERSIONS

SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"


class Dispatch:
    def __init__(
        self,
        features: Sequence[Feature],
        *,
        server_info: dict[str, str],
        instructions: str | None = None,
        extensions: Mapping[str, JSONObject] | None = None,
    ) -> None:
        # Only features with something to serve register methods and advertise a capability.
        self.features = [feature for feature in features if feature.active]
        self.server_info = server_info
        self.instructions = instructions
        self.extensions = dict(extensions or {})
        """Extensions advertised in 2026 capabilities beside the features' own (e.g. the OAuth
        client-credentials extension: served by the authorization server, not by a method here)."""
        common: dict[str, Handler] = {}
        legacy: dict[str, Handler] = {"ping": self._ping}
        modern: dict[str, Handler] = {"server/discover": self._discover}
        self._binders: dict[str, Binder] = {}
        for feature in self.features:
            common.update(feature.methods())
            legacy.update(feature.legacy_methods())
            modern.update(feature.modern_methods())
            self._binders.update(feature.binders())
        self._legacy: dict[str, Handler] = {**common, **legacy}
        self._modern: dict[str, Handler] = {**common, **modern}

    def capabilities(self, modern: bool) -> dict[str, JSONObject]:
        capabilities: dict[str, JSONObject] = {}
        for feature in self.features:
            advertised = feature.capability(modern)
            if advertised is not None:
                key = feature.capability_key
                capabilities[key] = {**capabilities.get(key, {}), **advertised}
        if modern and self.extensions:  # undefined on the 2025 wire, as the tasks extension
            capabilities["extensions"] = {**capabilities.get("extensions", {}), **self.extensions}
        return capabilities

    def binder_for(self, method: str) -> Binder | None:
        """The binder of a method that binds itself (``tools/call``); None for a plain handler's
        (or an unknown) method, which the server binds to :meth:`handler_for`."""
        return self._binders.get(method)

    def handler_for(self, method: str, modern: bool) -> Handler:
        handler = (self._modern if modern else self._legacy).get(method)
        if handler is None:
            raise JsonRpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return handler

    def initialize(self, request: Request, storability: Storability) -> Initialized:
        """2025 initialize: what the new transport session keeps, and the InitializeResult.
        Raises -32602 for params initialize cannot accept, or ``storability`` refuses (nothing
        is stored then)."""
        attributes = transport_session_attributes(request.params, storability)
        return Initialized(attributes, self.initialize_result(str(attributes["protocol_version"])))

    def initialize_result(self, version: str) -> JSONObject:
        result: JSONObject = {
            "protocolVersion": version,
            "capabilities": self.capabilities(modern=False),
            "serverInfo": self.server_info,
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def finish(self, result: JSONObject, call: RequestContext) -> JSONObject:
        if call.modern:
            result.setdefault("resultType", "complete")
            # 2026-07-28: servers SHOULD identify themselves on every result.
            meta = result.get("_meta")
            result["_meta"] = {**(meta if isinstance(meta, Mapping) else {}), SERVER_INFO_META_KEY: self.server_info}
        return result

    async def _ping(self, request: Request, call: RequestContext) -> JSONObject:
        return {}

    async def _discover(self, request: Request, call: RequestContext) -> JSONObject:
        result: JSONObject = {
            "supportedVersions": list(MODERN_VERSIONS),
            "capabilities": self.capabilities(modern=True),
            "serverInfo": self.server_info,
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "public",
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result
