"""Bearer API keys, stored hashed in the session table (``apikey#<sha256>``).

A key is shown once, when minted; only its SHA-256 is stored, so a table dump reveals no
key. Verified keys are cached in-process for ``cache_seconds`` (default 60) to keep the
lookup off the per-request critical path: a revocation takes effect within that time.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.application.auth.base import OAUTH_PRINCIPAL_PREFIX, AuthError, Principal, bearer_token
from mcp_platform.application.blocking import IN_THREAD, Blocking

KEY_PREFIX = "mcpk_"
CACHE_LIMIT = 1024


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiKeyStore:
    """Mint, look up and revoke keys. ``client`` is a plain DynamoDB client (not DAX: X4)."""

    def __init__(self, table_name: str, client: Any) -> None:
        self.table_name = table_name
        self.client = client

    def mint(self, principal: str, label: str = "", key: str | None = None) -> str:
        if not principal:
            raise ValueError("principal is required")
        if principal.startswith(OAUTH_PRINCIPAL_PREFIX):
            raise ValueError(f"an API-key principal cannot start with {OAUTH_PRINCIPAL_PREFIX!r} (OAuth subjects)")
        key = key or KEY_PREFIX + secrets.token_urlsafe(32)
        self.client.put_item(
            TableName=self.table_name,
            Item={
                ts.PK: {"S": ts.API_KEY_PREFIX + hash_key(key)},
                ts.SK: {"S": ts.METADATA_SK},
                "principal": {"S": principal},
                "label": {"S": label},
                ts.CREATED_AT: {"N": str(int(time.time()))},
            },
        )
        return key

    def principal_for(self, key: str) -> str | None:
        # Consistent: an authorization decision (X4), and a revoked key must not linger in DAX.
        response = self.client.get_item(
            TableName=self.table_name,
            Key={ts.PK: {"S": ts.API_KEY_PREFIX + hash_key(key)}, ts.SK: {"S": ts.METADATA_SK}},
            ConsistentRead=True,
        )
        item = response.get("Item")
        return item["principal"]["S"] if item else None

    def revoke(self, key: str) -> bool:
        response = self.client.delete_item(
            TableName=self.table_name,
            Key={ts.PK: {"S": ts.API_KEY_PREFIX + hash_key(key)}, ts.SK: {"S": ts.METADATA_SK}},
            ReturnValues="ALL_OLD",
        )
        return "Attributes" in response


class ApiKeyAuthenticator:
    def __init__(
        self,
        store: ApiKeyStore,
        cache_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        *,
        blocking: Blocking = IN_THREAD,
    ) -> None:
        self.store = store
        self.blocking = blocking
        self.cache_seconds = cache_seconds
        self._clock = clock
        self._cache: OrderedDict[str, tuple[Principal, float]] = OrderedDict()  # digest: (who, until)

    async def authenticate(self, headers: dict[str, str], client_host: str) -> Principal:
        key = bearer_token(headers)
        digest = hash_key(key)
        now = self._clock()
        cached = self._cache.get(digest)
        if cached is not None and cached[1] > now:
            return cached[0]  # a frozen Principal: shared by the key's requests
        principal = await self.blocking(self.store.principal_for, key)
        if principal is None or principal.startswith(OAUTH_PRINCIPAL_PREFIX):  # never an OAuth subject
            self._cache.pop(digest, None)
            raise AuthError("Unknown or revoked API key")
        verified = Principal(id=principal, kind="api_key")
        self._cache[digest] = (verified, now + self.cache_seconds)
        self._cache.move_to_end(digest)
        while len(self._cache) > CACHE_LIMIT:
            self._cache.popitem(last=False)
        return verified
