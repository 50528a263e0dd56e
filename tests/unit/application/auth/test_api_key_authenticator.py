"""The API-key decision against an in-memory key directory: cache, expiry of the cache, refusals."""

from __future__ import annotations

import asyncio

import pytest

from mcp_platform.application.auth.api_keys import ApiKeyAuthenticator
from mcp_platform.application.auth.base import AuthError
from mcp_platform.application.auth.ports import KeyHolder


class MemoryDirectory:
    def __init__(self, keys: dict[str, str], tenants: dict[str, str] | None = None) -> None:
        self.keys = keys
        self.tenants = tenants or {}
        self.lookups = 0

    def holder_of(self, key: str) -> KeyHolder | None:
        self.lookups += 1
        principal = self.keys.get(key)
        return None if principal is None else KeyHolder(principal, self.tenants.get(key))


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


def test_a_tenant_key_names_a_caller_whose_owner_is_tenant_qualified() -> None:
    # Given two keys of the same principal name in two tenants, and one without a tenant
    directory = MemoryDirectory(
        {"mcpk_a": "alice", "mcpk_b": "alice", "mcpk_c": "alice"}, {"mcpk_a": "acme", "mcpk_b": "globex"}
    )
    auth = ApiKeyAuthenticator(directory)
    # When each is used
    a, b, c = (asyncio.run(auth.authenticate(bearer(key), "127.0.0.1")) for key in ("mcpk_a", "mcpk_b", "mcpk_c"))
    # Then each caller has its tenant, and three distinct owners (the untenanted one unchanged)
    assert (a.tenant, b.tenant, c.tenant) == ("acme", "globex", None)
    assert (a.owner, b.owner, c.owner) == ("tenant:acme/alice", "tenant:globex/alice", "alice")


@pytest.mark.parametrize(
    ("principal", "tenant"),
    [("tenant:acme/alice", None), ("alice", "bad/tenant"), ("alice", "")],
)
def test_a_record_that_could_pass_for_another_owner_is_refused(principal: str, tenant: str | None) -> None:
    # A record the mint command would not write (edited in the table): the key is refused
    tenants = {} if tenant is None else {"mcpk_x": tenant}
    auth = ApiKeyAuthenticator(MemoryDirectory({"mcpk_x": principal}, tenants))
    with pytest.raises(AuthError, match="Unknown or revoked"):
        asyncio.run(auth.authenticate(bearer("mcpk_x"), "127.0.0.1"))


def test_the_groups_a_key_was_minted_with_are_the_principals() -> None:
    # Given a key whose record names two groups
    class GroupedDirectory:
        def holder_of(self, key: str) -> KeyHolder | None:
            return KeyHolder("alice", groups=frozenset({"admins", "support"})) if key == "mcpk_g" else None

    # When it is verified
    principal = asyncio.run(ApiKeyAuthenticator(GroupedDirectory()).authenticate(bearer("mcpk_g"), "127.0.0.1"))
    # Then the principal is in those groups
    assert (principal.id, principal.groups) == ("alice", frozenset({"admins", "support"}))
