"""The protocol's dispatch table against features of its own making (no catalog, no storage):
method sets per era, capabilities derived from what is registered, results finished per era."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from mcp_platform.protocol.dispatch import SERVER_INFO_META_KEY, Dispatch
from mcp_platform.protocol.features import Feature, Handler
from mcp_platform.protocol.jsonrpc import METHOD_NOT_FOUND, JsonRpcError, Request
from mcp_platform.protocol.request_context import RequestContext

LEGACY = RequestContext(principal="p", protocol_version="2025-11-25", modern=False)
MODERN = RequestContext(principal="p", protocol_version="2026-07-28", modern=True)
INFO = {"name": "t", "version": "1"}


async def answer(request: Request, call: RequestContext) -> dict[str, Any]:
    return {"served": request.method}


class Fake(Feature):
    def __init__(
        self,
        key: str,
        advertised: dict[str, Any] | None,
        *,
        active: bool = True,
        common: tuple[str, ...] = (),
        legacy: tuple[str, ...] = (),
        modern: tuple[str, ...] = (),
    ) -> None:
        self.capability_key = key
        self._advertised, self._active = advertised, active
        self._common, self._legacy, self._modern = common, legacy, modern

    @property
    def active(self) -> bool:
        return self._active

    def capability(self, modern: bool) -> dict[str, Any] | None:
        return self._advertised

    def methods(self) -> Mapping[str, Handler]:
        return dict.fromkeys(self._common, answer)

    def legacy_methods(self) -> Mapping[str, Handler]:
        return dict.fromkeys(self._legacy, answer)

    def modern_methods(self) -> Mapping[str, Handler]:
        return dict.fromkeys(self._modern, answer)


def test_features_sharing_a_capability_advertise_it_together_and_an_inactive_one_nothing() -> None:
    dispatch = Dispatch(
        [
            Fake("resources", {"listChanged": True}, common=("resources/list",)),
            Fake("resources", {"subscribe": True}, legacy=("resources/subscribe",)),
            Fake("prompts", {"listChanged": False}, active=False, common=("prompts/list",)),
        ],
        server_info=INFO,
    )
    assert dispatch.capabilities(modern=False) == {"resources": {"listChanged": True, "subscribe": True}}
    assert len(dispatch.features) == 2
    with pytest.raises(JsonRpcError) as unknown:
        dispatch.handler_for("prompts/list", modern=False)  # not served, so not advertised either
    assert unknown.value.code == METHOD_NOT_FOUND


def test_each_era_has_its_own_methods() -> None:
    dispatch = Dispatch([Fake("x", None, common=("a",), legacy=("b",), modern=("c",))], server_info=INFO)
    for modern, served, missing in (
        (False, {"a", "b", "ping"}, {"c", "server/discover"}),
        (True, {"a", "c", "server/discover"}, {"b", "ping"}),
    ):
        for method in served:
            assert dispatch.handler_for(method, modern) is not None
        for method in missing:
            with pytest.raises(JsonRpcError):
                dispatch.handler_for(method, modern)


def test_extensions_are_advertised_beside_the_features_in_2026_only() -> None:
    dispatch = Dispatch([Fake("extensions", {"ext/a": {}})], server_info=INFO, extensions={"ext/b": {}})
    assert dispatch.capabilities(modern=True)["extensions"] == {"ext/a": {}, "ext/b": {}}
    legacy = Dispatch([], server_info=INFO, extensions={"ext/b": {}})
    assert "extensions" not in legacy.capabilities(modern=False)


def test_a_2026_result_is_finished_with_its_type_and_the_server_identity_a_2025_one_as_it_is() -> None:
    dispatch = Dispatch([], server_info=INFO, instructions="Use it well.")
    assert dispatch.finish({"x": 1}, LEGACY) == {"x": 1}
    finished = dispatch.finish({"x": 1, "_meta": {"k": "v"}}, MODERN)
    assert finished == {"x": 1, "resultType": "complete", "_meta": {"k": "v", SERVER_INFO_META_KEY: INFO}}
    assert dispatch.finish({"resultType": "input_required"}, MODERN)["resultType"] == "input_required"
    discovered = asyncio.run(
        dispatch.handler_for("server/discover", modern=True)(Request("server/discover", {}, 1), MODERN)
    )
    assert discovered["serverInfo"] == INFO and discovered["instructions"] == "Use it well."


def test_a_method_that_binds_itself_is_found_in_the_table_in_both_eras() -> None:
    """tools/call is routed by the dispatch table like every method: a feature's binder, not a
    branch on the method's name in the server."""
    from mcp_platform.protocol.binding import BoundRequest
    from mcp_platform.protocol.features import Binder, Feature

    def bind(request: Request, call: RequestContext) -> BoundRequest:
        raise AssertionError("not called here")

    class Binds(Feature):
        def binders(self) -> dict[str, Binder]:
            return {"tools/call": bind}

    dispatch = Dispatch([Binds()], server_info={"name": "t", "version": "1"})
    assert dispatch.binder_for("tools/call") is bind
    assert dispatch.binder_for("tools/list") is None
