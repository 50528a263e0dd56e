"""Cancel flags in the session table: the store behind
:class:`mcp_platform.application.cancellation.CallCancellation` (2025 era).

On Lambda one execution environment serves one request at a time, so the POST carrying a
client's cancellation reaches an environment other than the one streaming the call. That
instance leaves a short-lived flag item in the session table; the instance running the call
reads it on its poll tick and cancels the call exactly as a local cancellation does.

Item: ``pk=session#<transport session id>``, ``sk=cancel#<digest of the request id>``
(:func:`table_schema.cancel_flag_sk`), the ``owner`` who asked and a ``ttl`` a few minutes
ahead (D5 seconds). Flags carry no ``status``, so they never enter the status/ttl GSI (D8).
"""

from __future__ import annotations

import math

from botocore.exceptions import BotoCoreError, ClientError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.codec import from_attr, require_epoch_seconds, to_item
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.application.cancellation import CancelCheckFailed
from mcp_platform.application.sessions.errors import SessionStoreError
from mcp_platform.protocol.clock import Clock, SystemClock, iso_utc

# Long enough to outlive the poll interval and a request that reaches its instance after its
# cancellation; short enough that a leftover flag cannot touch a much later request.
FLAG_TTL_SECONDS = 300


class CancelFlags:
    """Writes and reads cancel flags (the application's ``CancelFlagStore``); one instance per
    process, shared by every request."""

    def __init__(
        self,
        table_name: str,
        gateway: DynamoGateway,
        *,
        ttl_seconds: int = FLAG_TTL_SECONDS,
        clock: Clock | None = None,
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError(f"ttl_seconds must be positive, got {ttl_seconds}")
        self.table_name = table_name
        self.gateway = gateway
        self.ttl_seconds = ttl_seconds
        self.clock: Clock = clock or SystemClock()

    def request(self, session_id: str, request_id: str | int, *, owner: str) -> None:
        """One PutItem. The caller has already checked that ``owner`` owns the session; a
        repeated cancellation simply rewrites the same flag."""
        now = self.clock.now()
        item = {
            ts.PK: ts.session_pk(session_id),
            ts.SK: ts.cancel_flag_sk(request_id),
            ts.OWNER: owner,
            ts.TTL: require_epoch_seconds(math.floor(now) + self.ttl_seconds),
            ts.REQUESTED_AT: iso_utc(now),
        }
        self.gateway.call("put_item", TableName=self.table_name, Item=to_item(item))

    def is_requested(self, session_id: str, request_id: str | int, *, owner: str) -> bool:
        """One GetItem. Consistent (X4): the flag was just written by another instance, and a
        cached "no such item" from DAX would hide it for the whole item-cache TTL."""
        key = to_item({ts.PK: ts.session_pk(session_id), ts.SK: ts.cancel_flag_sk(request_id)})
        try:
            response = self.gateway.call(
                "get_item",
                TableName=self.table_name,
                Key=key,
                ConsistentRead=True,
                ProjectionExpression="#owner, #ttl",
                ExpressionAttributeNames={"#owner": ts.OWNER, "#ttl": ts.TTL},
            )
        except (ClientError, BotoCoreError, SessionStoreError) as exc:
            raise CancelCheckFailed(f"cancel flag of request {request_id!r} unreadable: {exc}") from exc
        item = response.get("Item")
        if item is None:
            return False
        # Only the session's owner may cancel; an expired flag is no flag (D6), whether or not
        # DynamoDB has deleted it yet.
        owner_matches = from_attr(item.get(ts.OWNER, {"S": ""})) == owner
        return owner_matches and int(from_attr(item.get(ts.TTL, {"N": "0"}))) > self.clock.now()
