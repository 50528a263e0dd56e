"""The facade's state, in the session table with TTL: any instance serves any step of a sign-in.

One item per thing (keys in :mod:`mcp_platform.adapters.dynamodb.table_schema`): a registered client, an
authorization in progress, an authorization code, a sign-in's refresh grant and its refresh
tokens. Codes and tokens are stored under their SHA-256 only. Every read is consistent (X4: an
authorization decision) and filters expired items (D6) whatever DynamoDB's TTL has deleted yet.

One-time use is decided by DynamoDB, never by a read: a code is redeemed by a conditional update
(``attribute_not_exists(used_at)``) in the same transaction that creates its refresh grant, and a
refresh token is rotated by one transaction that retires it, checks its grant is alive and puts
its successor. Of two concurrent redemptions exactly one wins; the other is told the code or
token was used, and the caller revokes the grant (RFC 6749 section 4.1.2, OAuth 2.1 4.3.1).

A code and a refresh token carry the sign-in's ``tenant`` when it has one; without one the item
has no such attribute, as items written before tenants existed, which read as no tenant.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.aws_errors import CONDITIONAL_CHECK_FAILED, cancellation_reasons, error_code
from mcp_platform.adapters.dynamodb.codec import from_item, require_epoch_seconds, to_item
from mcp_platform.authorization_server.clients import ClientRecord
from mcp_platform.authorization_server.ports import (
    CodeGrant,
    PendingAuthorization,
    Redemption,
    RefreshGrant,
    digest,
)
from mcp_platform.protocol.clock import Clock

if TYPE_CHECKING:
    from mcp_platform.adapters.dynamodb.gateway import DynamoGateway

ALIVE = "attribute_exists(#pk) AND #ttl > :now"


class FacadeStore:
    """The service's :class:`~mcp_platform.authorization_server.ports.AuthorizationStore` in DynamoDB."""

    def __init__(self, table_name: str, gateway: DynamoGateway, clock: Clock) -> None:
        self.table_name = table_name
        self.gateway = gateway
        self.clock = clock

    # -- clients -------------------------------------------------------------------------------
    def put_client(self, record: ClientRecord) -> None:
        item = {
            "client_name": record.client_name,
            "redirect_uris": list(record.redirect_uris),
            "auth_method": record.auth_method,
            "grant_types": list(record.grant_types),
            "secret_hash": record.secret_hash,
            ts.CREATED_AT: record.created_at,
        }
        if not self.gateway.put_new(
            self.table_name, self._item(ts.OAUTH_CLIENT_PREFIX + record.client_id, record.expires_at, item)
        ):
            raise RuntimeError("client id collision")  # 192 random bits: never in practice

    def client(self, client_id: str) -> ClientRecord | None:
        item = self._get(ts.OAUTH_CLIENT_PREFIX + client_id)
        if item is None:
            return None
        return ClientRecord(
            client_id=client_id,
            client_name=item["client_name"],
            redirect_uris=tuple(item["redirect_uris"]),
            auth_method=item["auth_method"],
            grant_types=tuple(item["grant_types"]),
            secret_hash=item.get("secret_hash", ""),
            created_at=int(item.get(ts.CREATED_AT, 0)),
            expires_at=int(item[ts.TTL]),
        )

    def extend_client(self, client_id: str, expires_at: int) -> None:
        """A used registration lives on; an expired one is not resurrected (D7's rule)."""
        try:
            self.gateway.call(
                "update_item",
                TableName=self.table_name,
                Key=self._key(ts.OAUTH_CLIENT_PREFIX + client_id),
                UpdateExpression="SET #ttl = :ttl",
                ConditionExpression=ALIVE,
                ExpressionAttributeNames={"#pk": ts.PK, "#ttl": ts.TTL},
                ExpressionAttributeValues=to_item({":ttl": require_epoch_seconds(expires_at), ":now": self._now()}),
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise

    # -- authorizations in progress --------------------------------------------------------------
    def put_request(self, pending: PendingAuthorization) -> None:
        item = {
            "client_id": pending.client_id,
            "client_name": pending.client_name,
            "redirect_uri": pending.redirect_uri,
            "redirect_uri_given": pending.redirect_uri_given,
            "state": pending.state,
            "code_challenge": pending.code_challenge,
            "scope": list(pending.scope),
            "resource": pending.resource,
            "issuer": pending.issuer,
            "browser_hash": pending.browser_hash,
            "upstream_verifier": pending.upstream_verifier,
            "refreshable": pending.refreshable,
        }
        self.gateway.put_new(
            self.table_name, self._item(ts.OAUTH_REQUEST_PREFIX + pending.request_id, pending.expires_at, item)
        )

    def request(self, request_id: str) -> PendingAuthorization | None:
        item = self._get(ts.OAUTH_REQUEST_PREFIX + request_id)
        if item is None or "finished_at" in item:
            return None
        return PendingAuthorization(
            request_id=request_id,
            client_id=item["client_id"],
            client_name=item["client_name"],
            redirect_uri=item["redirect_uri"],
            redirect_uri_given=bool(item["redirect_uri_given"]),
            state=item["state"],
            code_challenge=item["code_challenge"],
            scope=tuple(item["scope"]),
            resource=item["resource"],
            issuer=item["issuer"],
            browser_hash=item["browser_hash"],
            upstream_verifier=item["upstream_verifier"],
            refreshable=bool(item["refreshable"]),
            expires_at=int(item[ts.TTL]),
            approved="approved_at" in item,
        )

    def approve(self, request_id: str, browser_hash: str) -> bool:
        """Consent given, once, by the browser holding the cookie (False: not so, or already)."""
        return self._mark(
            ts.OAUTH_REQUEST_PREFIX + request_id,
            "approved_at",
            "attribute_not_exists(approved_at) AND browser_hash = :browser",
            {":browser": browser_hash},
        )

    def finish(self, request_id: str) -> bool:
        """The request is over (denied, or its callback arrived): False when it already was."""
        return self._mark(ts.OAUTH_REQUEST_PREFIX + request_id, "finished_at", "attribute_not_exists(finished_at)", {})

    # -- codes, grants, refresh tokens -------------------------------------------------------------
    def put_code(self, code: str, grant: CodeGrant) -> None:
        item = {
            "client_id": grant.client_id,
            "redirect_uri": grant.redirect_uri,
            "redirect_uri_given": grant.redirect_uri_given,
            "code_challenge": grant.code_challenge,
            "scope": list(grant.scope),
            "resource": grant.resource,
            "issuer": grant.issuer,
            "subject": grant.subject,
            "refreshable": grant.refreshable,
            "grant_id": grant.grant_id,
            **_tenant(grant.tenant),
        }
        self.gateway.put_new(self.table_name, self._item(ts.OAUTH_CODE_PREFIX + digest(code), grant.expires_at, item))

    def code(self, code: str) -> CodeGrant | None:
        item = self._get(ts.OAUTH_CODE_PREFIX + digest(code))
        if item is None:
            return None
        return CodeGrant(
            client_id=item["client_id"],
            redirect_uri=item["redirect_uri"],
            redirect_uri_given=bool(item["redirect_uri_given"]),
            code_challenge=item["code_challenge"],
            scope=tuple(item["scope"]),
            resource=item["resource"],
            issuer=item["issuer"],
            subject=item["subject"],
            refreshable=bool(item["refreshable"]),
            expires_at=int(item[ts.TTL]),
            grant_id=item["grant_id"],
            used="used_at" in item,
            tenant=item.get("tenant"),
        )

    def redeem_code(self, code: str, refresh: tuple[str, RefreshGrant] | None) -> str:
        """Mark the code used and, in the same transaction, open its refresh grant and first token."""
        actions: list[dict[str, Any]] = [self._use(ts.OAUTH_CODE_PREFIX + digest(code))]
        if refresh is not None:
            token, grant = refresh
            actions.append(
                {
                    "Put": self._put_new(
                        ts.OAUTH_GRANT_PREFIX + grant.grant_id,
                        grant.expires_at,
                        {"client_id": grant.client_id, "subject": grant.subject},
                    )
                }
            )
            actions.append(
                {"Put": self._put_new(ts.OAUTH_REFRESH_PREFIX + digest(token), grant.expires_at, _refresh_item(grant))}
            )
        return self._transact(actions)

    def refresh(self, token: str) -> RefreshGrant | None:
        item = self._get(ts.OAUTH_REFRESH_PREFIX + digest(token))
        if item is None:
            return None
        return RefreshGrant(
            grant_id=item["grant_id"],
            client_id=item["client_id"],
            subject=item["subject"],
            scope=tuple(item["scope"]),
            resource=item["resource"],
            issuer=item["issuer"],
            expires_at=int(item[ts.TTL]),
            used="used_at" in item,
            tenant=item.get("tenant"),
        )

    def rotate_refresh(self, old: str, new: str, grant: RefreshGrant) -> str:
        """Retire ``old``, check the grant is alive, put ``new``: all or nothing."""
        alive = {
            "ConditionCheck": {
                "TableName": self.table_name,
                "Key": self._key(ts.OAUTH_GRANT_PREFIX + grant.grant_id),
                "ConditionExpression": ALIVE,
                "ExpressionAttributeNames": {"#pk": ts.PK, "#ttl": ts.TTL},
                "ExpressionAttributeValues": to_item({":now": self._now()}),
            }
        }
        put = {"Put": self._put_new(ts.OAUTH_REFRESH_PREFIX + digest(new), grant.expires_at, _refresh_item(grant))}
        return self._transact([self._use(ts.OAUTH_REFRESH_PREFIX + digest(old)), alive, put])

    def revoke_grant(self, grant_id: str) -> None:
        """Every refresh token of the grant stops working (each rotation checks the grant)."""
        self.gateway.call("delete_item", TableName=self.table_name, Key=self._key(ts.OAUTH_GRANT_PREFIX + grant_id))

    # -- helpers -----------------------------------------------------------------------------------
    def _now(self) -> int:
        return math.floor(self.clock.now())

    def _key(self, pk: str) -> dict[str, Any]:
        return to_item({ts.PK: pk, ts.SK: ts.OAUTH_SK})

    def _item(self, pk: str, expires_at: int, values: dict[str, Any]) -> dict[str, Any]:
        return to_item({ts.PK: pk, ts.SK: ts.OAUTH_SK, ts.TTL: require_epoch_seconds(expires_at), **values})

    def _put_new(self, pk: str, expires_at: int, values: dict[str, Any]) -> dict[str, Any]:
        return {
            "TableName": self.table_name,
            "Item": self._item(pk, expires_at, values),
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": ts.PK},
        }

    def _use(self, pk: str) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self.table_name,
                "Key": self._key(pk),
                "UpdateExpression": "SET used_at = :now",
                "ConditionExpression": f"{ALIVE} AND attribute_not_exists(used_at)",
                "ExpressionAttributeNames": {"#pk": ts.PK, "#ttl": ts.TTL},
                "ExpressionAttributeValues": to_item({":now": self._now()}),
            }
        }

    def _get(self, pk: str) -> dict[str, Any] | None:
        # Consistent: an authorization decision (X4).
        response = self.gateway.call("get_item", TableName=self.table_name, Key=self._key(pk), ConsistentRead=True)
        raw = response.get("Item")
        if not raw:
            return None
        item = from_item(raw)
        if int(item.get(ts.TTL, 0)) <= self._now():  # D6: expired is not found
            return None
        return item

    def _mark(self, pk: str, attribute: str, condition: str, values: dict[str, Any]) -> bool:
        try:
            self.gateway.call(
                "update_item",
                TableName=self.table_name,
                Key=self._key(pk),
                UpdateExpression=f"SET {attribute} = :now",
                ConditionExpression=f"{ALIVE} AND {condition}",
                ExpressionAttributeNames={"#pk": ts.PK, "#ttl": ts.TTL},
                ExpressionAttributeValues=to_item({":now": self._now(), **values}),
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            return False
        return True

    def _transact(self, actions: list[dict[str, Any]]) -> str:
        try:
            self.gateway.call("transact_write_items", TransactItems=actions)
        except ClientError as exc:
            if error_code(exc) != "TransactionCanceledException":
                raise
            reasons = cancellation_reasons(exc)
            first = reasons[0].code if reasons else ""
            if first == CONDITIONAL_CHECK_FAILED:
                return Redemption.USED if self._used(actions[0]) else Redemption.GONE
            if any(reason.code == CONDITIONAL_CHECK_FAILED for reason in reasons):
                return Redemption.GONE  # the grant was revoked or has expired
            raise
        return Redemption.DONE

    def _used(self, update: dict[str, Any]) -> bool:
        """Why a redemption's first action failed: used before (a replay), or expired/missing."""
        response = self.gateway.call(
            "get_item", TableName=self.table_name, Key=update["Update"]["Key"], ConsistentRead=True
        )
        raw = response.get("Item")
        return raw is not None and "used_at" in raw


def _refresh_item(grant: RefreshGrant) -> dict[str, Any]:
    return {
        "grant_id": grant.grant_id,
        "client_id": grant.client_id,
        "subject": grant.subject,
        "scope": list(grant.scope),
        "resource": grant.resource,
        "issuer": grant.issuer,
        **_tenant(grant.tenant),
    }


def _tenant(tenant: str | None) -> dict[str, str]:
    """The ``tenant`` attribute, absent without one (the format of a deployment without tenants)."""
    return {"tenant": tenant} if tenant is not None else {}
