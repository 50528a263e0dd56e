"""Reply items: a 2025 server-to-client request and its answer, whichever instance receives it.

On Lambda the client's response POST lands in another execution environment than the call that
waits for it. The waiting call writes the item *before* it sends its request on the stream
(:meth:`ClientReplies.expect`), so a response can never arrive for an item that is not there yet;
the instance that receives the response writes it into the item (:meth:`deliver`, conditioned
on: the item exists, is not expired, belongs to the responding principal and has no response
yet); the waiting call reads it (:meth:`read`, consistent) and removes the item (:meth:`discard`).

Item: ``pk=reply#<transport session id>``, ``sk=<sha256(request id)>``, ``owner``, ``method``,
``ttl`` (D5 seconds), then ``response`` (JSON text: stored exactly as received). No ``status``
attribute, so reply items never enter the status/ttl GSI (D8); outside ``session#``, so not audited.
"""

from __future__ import annotations

import math
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.aws_errors import error_code
from mcp_platform.adapters.dynamodb.codec import from_attr, require_epoch_seconds, to_attr, to_item
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.adapters.dynamodb.port_errors import translated
from mcp_platform.application.interactive.ports import InteractiveStoreError
from mcp_platform.protocol.clock import Clock, SystemClock

_DELIVERABLE = "attribute_exists(#pk) AND #owner = :owner AND #ttl > :now AND attribute_not_exists(#resp)"


class ClientReplies:
    """The reply items (``application.interactive.ports.ReplyStore``) in the session table."""

    def __init__(self, table_name: str, gateway: DynamoGateway, *, clock: Clock | None = None) -> None:
        self.table_name = table_name
        self.gateway = gateway
        self.clock: Clock = clock or SystemClock()

    def _key(self, session_id: str, request_id: str | int) -> dict[str, Any]:
        return to_item({ts.PK: ts.client_reply_pk(session_id), ts.SK: ts.client_reply_sk(request_id)})

    def expect(self, session_id: str, request_id: str, *, owner: str, method: str, ttl_seconds: int) -> None:
        """One PutItem; request ids are random, so an existing item is a defect (raised)."""
        item = {
            ts.PK: ts.client_reply_pk(session_id),
            ts.SK: ts.client_reply_sk(request_id),
            ts.OWNER: owner,
            ts.REPLY_METHOD: method,
            ts.TTL: require_epoch_seconds(math.floor(self.clock.now()) + ttl_seconds),
        }
        with translated(InteractiveStoreError, "reply item put"):
            created = self.gateway.put_new(self.table_name, to_item(item))
        if not created:
            raise RuntimeError(f"a reply item for request {request_id!r} exists already: request ids must be unique")

    def deliver(self, session_id: str, request_id: str | int, *, owner: str, response: str) -> bool:
        """One conditional UpdateItem. False: no such outstanding request for ``owner`` (unknown
        id, another principal's, expired, or answered already) -- all refused alike."""
        try:
            self.gateway.call(
                "update_item",
                TableName=self.table_name,
                Key=self._key(session_id, request_id),
                UpdateExpression="SET #resp = :resp",
                ConditionExpression=_DELIVERABLE,
                ExpressionAttributeNames={"#pk": ts.PK, "#owner": ts.OWNER, "#ttl": ts.TTL, "#resp": ts.REPLY_RESPONSE},
                ExpressionAttributeValues={
                    ":owner": to_attr(owner),
                    ":now": to_attr(math.floor(self.clock.now())),
                    ":resp": to_attr(response),
                },
            )
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise InteractiveStoreError(f"reply item update failed: {error_code(exc)}") from exc
        except BotoCoreError as exc:
            raise InteractiveStoreError(f"reply item update failed: {type(exc).__name__}") from exc
        return True

    def read(self, session_id: str, request_id: str, *, owner: str) -> str | None:
        """One GetItem, consistent (X4): the answer was just written by another instance, and a
        cached "no response yet" from DAX would hide it for the whole item-cache TTL."""
        with translated(InteractiveStoreError, "reply item read"):
            response = self.gateway.call(
                "get_item",
                TableName=self.table_name,
                Key=self._key(session_id, request_id),
                ConsistentRead=True,
                ProjectionExpression="#owner, #resp",
                ExpressionAttributeNames={"#owner": ts.OWNER, "#resp": ts.REPLY_RESPONSE},
            )
        item = response.get("Item")
        if item is None or ts.REPLY_RESPONSE not in item or from_attr(item[ts.OWNER]) != owner:
            return None
        return str(from_attr(item[ts.REPLY_RESPONSE]))

    def discard(self, session_id: str, request_id: str) -> None:
        """One DeleteItem once the call has its answer (or gave up): the TTL is the backstop."""
        with translated(InteractiveStoreError, "reply item delete"):
            self.gateway.call("delete_item", TableName=self.table_name, Key=self._key(session_id, request_id))
