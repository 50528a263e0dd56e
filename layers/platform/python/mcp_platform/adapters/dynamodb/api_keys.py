"""Bearer API keys, stored hashed in the session table (``apikey#<sha256>``).

A key is shown once, when minted; only its SHA-256 is stored, so a table dump reveals no
key. :class:`ApiKeyStore` is the key directory the authenticator
(:mod:`mcp_platform.application.auth.api_keys`) verifies against, and the ops tool's minting.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.application.auth.api_keys import KEY_PREFIX, hash_key
from mcp_platform.application.auth.base import OAUTH_PRINCIPAL_PREFIX
from mcp_platform.application.auth.ports import KeyHolder
from mcp_platform.application.auth.tenants import TENANT_OWNER_PREFIX, require_tenant

TENANT = "tenant"  # on a key's record: the tenant of its holder, absent for none
GROUPS = "groups"  # on a key's record: a string set of its holder's groups, absent for none

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class ApiKeyStore:
    """Mint, look up and revoke keys. ``client`` is a plain DynamoDB client (not DAX: X4)."""

    def __init__(self, table_name: str, client: DynamoDBClient) -> None:
        self.table_name = table_name
        self.client = client

    def mint(
        self,
        principal: str,
        label: str = "",
        key: str | None = None,
        *,
        tenant: str | None = None,
        groups: Iterable[str] = (),
    ) -> str:
        """A new key for ``principal`` (of ``tenant``, if given); ValueError for a principal or
        tenant that could be mistaken for another's (see :mod:`~mcp_platform.application.auth.tenants`)."""
        if not principal:
            raise ValueError("principal is required")
        named = sorted({group.strip() for group in groups})
        if "" in named:
            raise ValueError("a group name cannot be empty")
        for prefix, whose in ((OAUTH_PRINCIPAL_PREFIX, "OAuth subjects"), (TENANT_OWNER_PREFIX, "tenant owners")):
            if principal.startswith(prefix):
                raise ValueError(f"an API-key principal cannot start with {prefix!r} ({whose})")
        key = key or KEY_PREFIX + secrets.token_urlsafe(32)
        item: dict[str, Any] = {
            ts.PK: {"S": ts.API_KEY_PREFIX + hash_key(key)},
            ts.SK: {"S": ts.METADATA_SK},
            "principal": {"S": principal},
            "label": {"S": label},
            ts.CREATED_AT: {"N": str(int(time.time()))},
        }
        if tenant is not None:
            item[TENANT] = {"S": require_tenant(tenant)}
        if named:  # DynamoDB refuses an empty set
            item[GROUPS] = {"SS": named}
        self.client.put_item(TableName=self.table_name, Item=item)
        return key

    def holder_of(self, key: str) -> KeyHolder | None:
        # Consistent: an authorization decision (X4), and a revoked key must not linger in DAX.
        response = self.client.get_item(
            TableName=self.table_name,
            Key={ts.PK: {"S": ts.API_KEY_PREFIX + hash_key(key)}, ts.SK: {"S": ts.METADATA_SK}},
            ConsistentRead=True,
        )
        item = response.get("Item")
        if not item:
            return None
        tenant = item.get(TENANT, {}).get("S")
        groups = frozenset(item.get(GROUPS, {}).get("SS", ()))
        return KeyHolder(principal=item["principal"]["S"], tenant=tenant, groups=groups)

    def revoke(self, key: str) -> bool:
        response = self.client.delete_item(
            TableName=self.table_name,
            Key={ts.PK: {"S": ts.API_KEY_PREFIX + hash_key(key)}, ts.SK: {"S": ts.METADATA_SK}},
            ReturnValues="ALL_OLD",
        )
        return "Attributes" in response
