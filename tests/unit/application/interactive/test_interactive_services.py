"""The interactive services are built at start from factories of their adapters, and build each
side on first use only, once per process."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_platform.application.interactive.outbound import ServerRequests
from mcp_platform.application.interactive.ports import StateKeysMissing
from mcp_platform.application.interactive.services import InteractiveServices


def test_each_side_is_built_on_first_use_and_once() -> None:
    built: list[str] = []
    vault, replies = object(), object()

    def make_vault() -> Any:
        built.append("vault")
        return vault

    def make_replies() -> Any:
        built.append("replies")
        return replies

    services = InteractiveServices(vault=make_vault, replies=make_replies, client_request_timeout_seconds=7)
    assert built == []  # nothing at start
    assert services.vault is vault and services.vault is vault
    outbound = services.outbound
    assert isinstance(outbound, ServerRequests) and outbound.replies is replies and outbound.timeout_seconds == 7
    assert services.outbound is outbound
    assert built == ["vault", "replies"]


def test_a_vault_that_cannot_be_built_is_refused_each_time_it_is_asked_for() -> None:
    def no_keys() -> Any:
        raise StateKeysMissing("no request-state secret is configured")

    services = InteractiveServices(vault=no_keys, replies=object)
    for _ in range(2):
        with pytest.raises(StateKeysMissing):
            services.vault  # noqa: B018 (the property builds it)
