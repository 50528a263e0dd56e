"""The API-key decision against an in-memory key directory: cache, expiry of the cache, refusals."""

from __future__ import annotations

import asyncio

import pytest

from mcp_platform.application.auth.api_keys import ApiKeyAuthenticator
from mcp_platform.application.auth.base import AuthError


class MemoryDirectory:
    def __init__(self, keys: dict[str, str]) -> None:
        self.keys = keys
        self.lookups = 0

    def principal_for(self, key: str) -> str | None:
        self.lookups += 1
        return self.keys.get(key)


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def test_a_verified_key_is_cached_until_the_cache_expires_then_a_revocation_holds() -> None:
    # Given a directory with one key and a controllable clock
    directory = MemoryDirectory({"mcpk_a": "alice"})
    now = [0.0]
    auth = ApiKeyAuthenticator(directory, cache_seconds=60, monotonic=lambda: now[0])
    # When the key is used twice within the cache time
    first = asyncio.run(auth.authenticate(bearer("mcpk_a"), "127.0.0.1"))
    second = asyncio.run(auth.authenticate(bearer("mcpk_a"), "127.0.0.1"))
    # Then the directory was asked once
    assert (first.id, first.kind, second.id, directory.lookups) == ("alice", "api_key", "alice", 1)
    # And once the key is revoked and the cache time passed, it is refused
    del directory.keys["mcpk_a"]
    now[0] = 61.0
    with pytest.raises(AuthError, match="Unknown or revoked"):
        asyncio.run(auth.authenticate(bearer("mcpk_a"), "127.0.0.1"))


def test_a_key_naming_an_oauth_subject_is_refused() -> None:
    auth = ApiKeyAuthenticator(MemoryDirectory({"mcpk_b": "oauth:https://issuer#bob"}))
    with pytest.raises(AuthError):
        asyncio.run(auth.authenticate(bearer("mcpk_b"), "127.0.0.1"))
