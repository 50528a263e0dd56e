"""``MCP_AUTH=api_key``: bearer API keys, verified against a key directory and cached briefly.

A key is shown once, when minted; only its SHA-256 is stored, so a table dump reveals no key.
Verified keys are cached in-process for ``cache_seconds`` (default 60) to keep the lookup off
the per-request critical path: a revocation takes effect within that time. Where keys are kept
is the directory's business (:mod:`mcp_platform.adapters.dynamodb.api_keys`).
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable

from mcp_platform.application.auth.base import OAUTH_PRINCIPAL_PREFIX, AuthError, Principal, bearer_token
from mcp_platform.application.auth.ports import ApiKeyDirectory, KeyHolder
from mcp_platform.application.auth.tenants import is_tenant, reserved_principal_id
from mcp_platform.application.blocking import IN_THREAD, Blocking

KEY_PREFIX = "mcpk_"
CACHE_LIMIT = 1024


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiKeyAuthenticator:
    def __init__(
        self,
        store: ApiKeyDirectory,
        cache_seconds: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
        *,
        blocking: Blocking = IN_THREAD,
    ) -> None:
        self.store = store
        self.blocking = blocking
        self.cache_seconds = cache_seconds
        self._monotonic = monotonic
        self._cache: OrderedDict[str, tuple[Principal, float]] = OrderedDict()  # digest: (who, until)

    async def authenticate(self, headers: dict[str, str], client_host: str) -> Principal:
        key = bearer_token(headers)
        digest = hash_key(key)
        now = self._monotonic()
        cached = self._cache.get(digest)
        if cached is not None and cached[1] > now:
            return cached[0]  # a frozen Principal: shared by the key's requests
        holder = await self.blocking(self.store.holder_of, key)
        if holder is None or not _acceptable(holder):
            self._cache.pop(digest, None)
            raise AuthError("Unknown or revoked API key")
        verified = Principal(id=holder.principal, kind="api_key", tenant=holder.tenant, groups=holder.groups)
        self._cache[digest] = (verified, now + self.cache_seconds)
        self._cache.move_to_end(digest)
        while len(self._cache) > CACHE_LIMIT:
            self._cache.popitem(last=False)
        return verified


def _acceptable(holder: KeyHolder) -> bool:
    """A record that names an OAuth subject or a tenant owner as its principal, or a tenant
    outside the syntax, was not minted by us: the key is refused rather than trusted."""
    principal = holder.principal
    if principal.startswith(OAUTH_PRINCIPAL_PREFIX) or reserved_principal_id(principal):
        return False
    return holder.tenant is None or is_tenant(holder.tenant)
