"""The protocol features served from the catalog: tools, resources, prompts, completion. Each
registers its methods and its capability (:mod:`.dispatch` builds the method tables from them),
and only when the catalog holds something it serves: nothing is advertised that is not served
(an empty feature's methods answer -32601 like any unknown method). Features whose methods are
use cases over storage (resource subscriptions, tasks, the log level) are the application's,
built on the same :class:`Feature`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp_platform.protocol.access import CALL_TOOL, GET_PROMPT, READ_RESOURCE
from mcp_platform.protocol.apps import EXTENSION_ID as APPS_EXTENSION
from mcp_platform.protocol.binding import BoundRequest
from mcp_platform.protocol.catalog import Catalog
from mcp_platform.protocol.context import ToolContext, ToolServices
from mcp_platform.protocol.input_required import InputRequired
from mcp_platform.protocol.jsonrpc import (
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    UNAVAILABLE,
    JSONObject,
    JsonRpcError,
    Request,
)
from mcp_platform.protocol.pagination import page
from mcp_platform.protocol.prompts import PromptArgumentError, messages
from mcp_platform.protocol.request_context import RequestContext
from mcp_platform.protocol.resources import CacheScope, InvalidResourceUri, ResourceNotFound, contents

Handler = Callable[[Request, RequestContext], Awaitable[JSONObject]]
Binder = Callable[[Request, RequestContext], BoundRequest]
"""Binds one request of a method to what admits and serves it (``Feature.binders``)."""
MAX_COMPLETIONS = 100  # completion/complete returns at most 100 values (spec)


class Feature:
    """A feature: the methods it serves and the capability it advertises. Features that name
    the same ``capability_key`` advertise one capability together (their fields merged)."""

    capability_key = ""

    @property
    def active(self) -> bool:
        """Whether it has anything to serve (an inactive feature registers and advertises nothing)."""
        return True

    def capability(self, modern: bool) -> JSONObject | None:
        """What the feature advertises in ``modern`` or 2025 capabilities; None: nothing."""
        return None

    def methods(self) -> Mapping[str, Handler]:
        """Methods of every revision."""
        return {}

    def legacy_methods(self) -> Mapping[str, Handler]:
        """Methods of the 2025 revisions only (2026-07-28 removed them)."""
        return {}

    def modern_methods(self) -> Mapping[str, Handler]:
        """Methods of 2026-07-28 only (extensions that the 2025 wire does not define)."""
        return {}

    def binders(self) -> Mapping[str, Binder]:
        """Methods of every revision that bind themselves: what admits them and what their work
        is, and what the transport must check or offer first (``BoundRequest``). A plain
        handler is bound by the server: admitted, then run."""
        return {}


class CatalogFeature(Feature):
    """A feature served from the catalog, without storage."""

    def __init__(self, catalog: Catalog, services: ToolServices, page_size: int = 50) -> None:
        self.catalog = catalog
        self.services = services
        self.page_size = page_size

    @property
    def active(self) -> bool:
        raise NotImplementedError

    def capability(self, modern: bool) -> JSONObject | None:
        # listChanged only with the notification streams that deliver it (stack option).
        return {"listChanged": self.services.notifications is not None}

    def methods(self) -> Mapping[str, Handler]:
        raise NotImplementedError

    def _context(self, call: RequestContext) -> ToolContext[ToolServices]:
        # 2026: prompts/get and resources/read may ask too (the request's interaction).
        return ToolContext.for_request(call, self.services)

    def _page(
        self,
        key: str,
        listing: list[dict[str, Any]],
        named_by: str,
        action: str,
        request: Request,
        call: RequestContext,
    ) -> dict[str, Any]:
        """One page of what the caller may use: with policies, the items they forbid are left out
        before paging (so pages stay full and a cursor counts what this caller sees)."""
        if call.access is not None:
            usable = call.access.usable(action, [item[named_by] for item in listing])
            listing = [item for item, shown in zip(listing, usable, strict=True) if shown]
        cursor = request.params.get("cursor")
        return page(key, listing, cursor, self.page_size, modern=call.modern, private=call.access is not None)


class ToolsFeature(CatalogFeature):
    capability_key = "tools"

    @property
    def active(self) -> bool:
        return True  # advertised even when empty: a server always has tools/list

    def methods(self) -> Mapping[str, Handler]:
        return {"tools/list": self._list}

    async def _list(self, request: Request, call: RequestContext) -> JSONObject:
        # S5: no AWS call; S6: paginated with an opaque cursor.
        return self._page("tools", self.catalog.tools.listing(), "name", CALL_TOOL, request, call)


class ResourcesFeature(CatalogFeature):
    """Resources and templates. With subscriptions on, ``subscribe`` is advertised beside
    ``listChanged`` by the application's subscriptions feature, which serves the 2025 methods."""

    capability_key = "resources"

    @property
    def active(self) -> bool:
        return bool(self.catalog.resources or self.catalog.templates)

    def methods(self) -> Mapping[str, Handler]:
        return {"resources/list": self._list, "resources/templates/list": self._templates, "resources/read": self._read}

    async def _list(self, request: Request, call: RequestContext) -> JSONObject:
        listing = [self.catalog.resources[uri].describe() for uri in sorted(self.catalog.resources)]
        return self._page("resources", listing, "uri", READ_RESOURCE, request, call)

    async def _templates(self, request: Request, call: RequestContext) -> JSONObject:
        listing = [self.catalog.templates[name].describe() for name in sorted(self.catalog.templates)]
        return self._page("resourceTemplates", listing, "uriTemplate", READ_RESOURCE, request, call)

    async def _read(self, request: Request, call: RequestContext) -> JSONObject:
        uri = request.params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise JsonRpcError(INVALID_PARAMS, "params.uri must be a non-empty string")
        if call.access is not None:
            call.access.require(READ_RESOURCE, uri)  # before the read runs
        try:
            listed, cache = await self._contents(uri, self._context(call))
        except ResourceNotFound as exc:
            raise resource_not_found(uri, call.modern) from exc
        except InvalidResourceUri as exc:
            raise JsonRpcError(INVALID_PARAMS, f"Invalid resource URI {uri}: {exc}", {"uri": uri}) from exc
        result: JSONObject = {"contents": listed}
        if call.modern:  # 2026-07-28: every read result carries its caching hints
            result.update(ttlMs=cache[0], cacheScope=cache[1])
        return result

    async def readable(self, uri: str, principal: str) -> bool:
        """Whether ``principal`` may read ``uri``: the read itself decides (a subscription is
        authorized exactly as a read is). Not readable: a URI that names nothing, or whose read
        refuses this caller, or would need to ask the client (no request to ask on). A store
        that is briefly unavailable is not an answer: that error propagates."""
        ctx = ToolContext(principal=principal, services=self.services)
        try:
            await self._contents(uri, ctx)
        except (ResourceNotFound, InvalidResourceUri, InputRequired):
            return False
        except JsonRpcError as refused:
            if refused.code == UNAVAILABLE:
                raise
            return False
        return True

    async def _contents(
        self, uri: str, ctx: ToolContext[ToolServices]
    ) -> tuple[list[JSONObject], tuple[int, CacheScope]]:
        """The read of ``uri`` (its contents and caching hints); ResourceNotFound when it names nothing."""
        fixed = self.catalog.resources.get(uri)
        if fixed is not None:
            return fixed.contents(await fixed.run(ctx)), fixed.cache
        found = self.catalog.find_template(uri)
        if found is None:
            raise ResourceNotFound(uri)
        template, variables = found
        value = await template.run(ctx, **template.arguments(variables))
        return contents(uri, value, template.mime_type), template.cache


def resource_not_found(uri: str, modern: bool) -> JsonRpcError:
    """2026-07-28 retires -32002: an unknown URI is invalid params there, with ``data.uri``."""
    if modern:
        return JsonRpcError(INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})
    return JsonRpcError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})


class PromptsFeature(CatalogFeature):
    capability_key = "prompts"

    @property
    def active(self) -> bool:
        return bool(self.catalog.prompts)

    def methods(self) -> Mapping[str, Handler]:
        return {"prompts/list": self._list, "prompts/get": self._get}

    async def _list(self, request: Request, call: RequestContext) -> JSONObject:
        listing = [self.catalog.prompts[name].describe() for name in sorted(self.catalog.prompts)]
        return self._page("prompts", listing, "name", GET_PROMPT, request, call)

    async def _get(self, request: Request, call: RequestContext) -> JSONObject:
        name = request.params.get("name")
        spec = self.catalog.prompts.get(name) if isinstance(name, str) else None
        if spec is None:
            raise JsonRpcError(INVALID_PARAMS, f"Unknown prompt: {name}")
        arguments = request.params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise JsonRpcError(INVALID_PARAMS, "params.arguments must be an object")
        if call.access is not None:
            call.access.require(GET_PROMPT, spec.name)  # before the prompt runs
        try:
            # The prompt may refuse an argument's value too (e.g. an unknown session handle).
            produced = await spec.run(self._context(call), **spec.bind(arguments))
        except PromptArgumentError as exc:
            raise JsonRpcError(INVALID_PARAMS, str(exc)) from exc
        result: JSONObject = {"messages": messages(produced)}
        if spec.description:
            result["description"] = spec.description
        return result


class CompletionFeature(CatalogFeature):
    capability_key = "completions"

    @property
    def active(self) -> bool:
        return self.catalog.has_completions

    def capability(self, modern: bool) -> JSONObject:
        return {}

    def methods(self) -> Mapping[str, Handler]:
        return {"completion/complete": self._complete}

    async def _complete(self, request: Request, call: RequestContext) -> JSONObject:
        """Every malformed field is -32602, named (nothing of the request is coerced)."""
        ref, argument = request.params.get("ref"), request.params.get("argument")
        if not isinstance(ref, dict):
            raise JsonRpcError(INVALID_PARAMS, "completion/complete needs params.ref (an object)")
        if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
            raise JsonRpcError(INVALID_PARAMS, "completion/complete needs params.argument with a name (a string)")
        value = argument.get("value", "")
        if not isinstance(value, str):
            raise JsonRpcError(INVALID_PARAMS, "params.argument.value must be a string")
        known = _known_arguments(request.params.get("context"))
        completers, declared = self._completers(ref)
        if call.access is not None:  # a forbidden prompt's or template's values are not offered either
            if ref["type"] == "ref/prompt":
                call.access.require(GET_PROMPT, ref["name"])
            else:
                call.access.require(READ_RESOURCE, ref["uri"])
        if argument["name"] not in declared:
            raise JsonRpcError(INVALID_PARAMS, f"Unknown argument: {argument['name']}")
        completer = completers.get(argument["name"])
        found = [] if completer is None else await completer(self._context(call), value, known)
        result: JSONObject = {"values": found[:MAX_COMPLETIONS], "total": len(found)}
        result["hasMore"] = len(found) > MAX_COMPLETIONS
        return {"completion": result}

    def _completers(self, ref: JSONObject) -> tuple[Mapping[str, Any], set[str]]:
        kind = ref.get("type")
        if kind == "ref/prompt":
            name = ref.get("name")
            if not isinstance(name, str):
                raise JsonRpcError(INVALID_PARAMS, "params.ref.name must be a string")
            spec = self.catalog.prompts.get(name)
            if spec is None:
                raise JsonRpcError(INVALID_PARAMS, f"Unknown prompt: {name}")
            return spec.completions, {a.name for a in spec.arguments}
        if kind == "ref/resource":
            uri = ref.get("uri")
            if not isinstance(uri, str):
                raise JsonRpcError(INVALID_PARAMS, "params.ref.uri must be a string")
            by_template = {t.uri_template: t for t in self.catalog.templates.values()}
            template = by_template.get(uri)
            if template is None:
                raise JsonRpcError(INVALID_PARAMS, f"Unknown resource template: {uri}")
            return template.completions, set(template.variables)
        raise JsonRpcError(INVALID_PARAMS, "params.ref.type must be ref/prompt or ref/resource")


def _known_arguments(context: Any) -> dict[str, str]:
    """``params.context.arguments``: the values already chosen, argument name -> string."""
    if context is None:
        return {}
    if not isinstance(context, dict):
        raise JsonRpcError(INVALID_PARAMS, "params.context must be an object")
    known = context.get("arguments")
    if known is None:
        return {}
    if not isinstance(known, dict) or not all(isinstance(v, str) for v in known.values()):
        raise JsonRpcError(INVALID_PARAMS, "params.context.arguments must map argument names to strings")
    return dict(known)


class AppsFeature(CatalogFeature):
    """MCP Apps (``io.modelcontextprotocol/ui``): advertised once the catalog serves a view (a
    ``ui://`` resource). It serves no method of its own: a host lists the tools (their
    ``_meta.ui``) and reads the view with ``resources/read``.

    Advertised in both eras, unlike the tasks extension, whose methods exist only in 2026-07-28:
    every part of MCP Apps works on the 2025 wire, and its hosts negotiate it in ``initialize``
    (the extension's own spec shows that exchange). The TypeScript SDK and FastMCP advertise it in
    the InitializeResult too; the Python SDK only in ``server/discover``. The 2025-11-25 schema
    names no ``extensions`` member, but its capabilities admit members it does not name, so a
    2025 client that does not know the extension ignores it."""

    capability_key = "extensions"

    @property
    def active(self) -> bool:
        return bool(self.catalog.views)

    def capability(self, modern: bool) -> JSONObject:
        return {APPS_EXTENSION: {}}

    def methods(self) -> Mapping[str, Handler]:
        return {}


FEATURES: tuple[type[CatalogFeature], ...] = (
    ToolsFeature,
    ResourcesFeature,
    PromptsFeature,
    CompletionFeature,
    AppsFeature,
)
