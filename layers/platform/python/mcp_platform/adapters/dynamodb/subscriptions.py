"""2025 ``resources/subscribe``: what a transport session watches, and which stream delivers it.

The subscribe POST and the GET stream that delivers the updates land on different instances, so
the subscription set lives in the table (``pk=subs#<session id>``), one item per URI (``uri``,
``owner``, ``since``: when it was made, epoch seconds, ``ttl``), next to the stream lease
(``sk=stream``: the ``holder`` id of the one GET stream that delivers). A stream reads the whole
partition with one consistent Query per poll: the set and the lease together.

One stream per session delivers (the 2025 transport: a message goes on one stream only, never
broadcast): the newest GET takes the lease, and an older stream that sees another holder ends.
Newest wins, not first: behind a Function URL a client's closed stream is not seen, so the old
one would otherwise hold the session until its duration cap.

The caller has checked that ``owner`` owns the live session (404 otherwise); items still carry
the owner, and a snapshot ignores any other's. A subscription outlives no session in practice:
DELETE removes the partition, and a stream checks its session while it runs. Its ``ttl`` only
collects what an expired session left behind; every stream open and re-subscribe renews it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.aws_errors import error_code
from mcp_platform.adapters.dynamodb.codec import from_item, require_epoch_seconds, to_item
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.adapters.dynamodb.port_errors import translated
from mcp_platform.application.notifications.ports import NotificationStoreError, Snapshot, TooManySubscriptions
from mcp_platform.application.sessions.errors import SessionNotFound
from mcp_platform.protocol.clock import Clock, SystemClock

if TYPE_CHECKING:
    from mcp_platform.application.sessions.ports import SessionRepository

__all__ = ["LiveSessions", "SessionSubscriptions", "Snapshot", "TooManySubscriptions"]

MAX_SUBSCRIPTIONS = 32  # per session: a stream polls one log partition per subscribed URI
SUBSCRIPTION_TTL_SECONDS = 86_400
SINCE = "since"
_CCF = "ConditionalCheckFailedException"


class SessionSubscriptions:
    """The subscription sets and stream leases (``application.notifications.ports.SubscriptionStore``)."""

    def __init__(
        self,
        table_name: str,
        gateway: DynamoGateway,
        *,
        clock: Clock | None = None,
        max_per_session: int = MAX_SUBSCRIPTIONS,
        ttl_seconds: int = SUBSCRIPTION_TTL_SECONDS,
    ) -> None:
        self.table_name = table_name
        self.gateway = gateway
        self.clock: Clock = clock or SystemClock()
        self.max_per_session = max_per_session
        self.ttl_seconds = ttl_seconds

    def subscribe(self, session_id: str, uri: str, *, owner: str) -> None:
        """One Query (the limit) and one PutItem; subscribing again renews and moves ``since``."""
        current = self.snapshot(session_id, owner=owner)
        if uri not in current.since and len(current.since) >= self.max_per_session:
            raise TooManySubscriptions(self.max_per_session)
        self._put(session_id, uri, owner, self.clock.now())

    def unsubscribe(self, session_id: str, uri: str) -> None:
        """One DeleteItem; unsubscribing what is not subscribed is a no-op (as the spec's ``{}``)."""
        key = {ts.PK: ts.subscriptions_pk(session_id), ts.SK: ts.subscription_sk(uri)}
        self._call("delete_item", TableName=self.table_name, Key=to_item(key))

    def snapshot(self, session_id: str, *, owner: str) -> Snapshot:
        """One consistent Query (X4: written by another instance a moment ago)."""
        params: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": ts.PK},
            "ExpressionAttributeValues": to_item({":pk": ts.subscriptions_pk(session_id)}),
            "ConsistentRead": True,
        }
        since: dict[str, float] = {}
        renew: list[str] = []
        holder: str | None = None
        now = self.clock.now()
        while True:
            response = self._call("query", **params)
            for raw in response.get("Items", []):
                item = from_item(raw)
                if item.get(ts.OWNER) != owner or int(item.get(ts.TTL, 0)) <= now:
                    continue  # another's (never expected) or expired (D6)
                if item[ts.SK] == ts.SUBSCRIPTION_STREAM_SK:
                    holder = str(item.get(ts.HOLDER, ""))
                elif isinstance(item.get(ts.URI), str):
                    since[item[ts.URI]] = float(item.get(SINCE, 0))
                    if int(item[ts.TTL]) - now < self.ttl_seconds / 2:
                        renew.append(item[ts.URI])
            if "LastEvaluatedKey" not in response:
                return Snapshot(since, holder, tuple(renew))
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def renew(self, session_id: str, snapshot: Snapshot, *, owner: str) -> None:
        """Rewrite the subscriptions past half their ttl, keeping their ``since``."""
        for uri in snapshot.renew:
            self._put(session_id, uri, owner, snapshot.since[uri])

    def claim_stream(self, session_id: str, holder: str, *, owner: str, seconds: float) -> None:
        """One PutItem: ``holder`` delivers from now on (an older stream sees it and ends)."""
        item = {
            ts.PK: ts.subscriptions_pk(session_id),
            ts.SK: ts.SUBSCRIPTION_STREAM_SK,
            ts.HOLDER: holder,
            ts.OWNER: owner,
            ts.TTL: require_epoch_seconds(math.ceil(self.clock.now() + seconds)),
        }
        self._call("put_item", TableName=self.table_name, Item=to_item(item))

    def release_stream(self, session_id: str, holder: str) -> None:
        """Delete the lease if ``holder`` still has it; a newer stream's lease is left alone."""
        key = {ts.PK: ts.subscriptions_pk(session_id), ts.SK: ts.SUBSCRIPTION_STREAM_SK}
        try:
            self.gateway.call(
                "delete_item",
                TableName=self.table_name,
                Key=to_item(key),
                ConditionExpression="#holder = :holder",
                ExpressionAttributeNames={"#holder": ts.HOLDER},
                ExpressionAttributeValues=to_item({":holder": holder}),
            )
        except ClientError as exc:
            # A failed condition is the expected case of a newer stream holding the lease (or of
            # DELETE having removed it): nothing of ours to release.
            if error_code(exc) != _CCF:
                raise NotificationStoreError(f"stream lease delete failed: {error_code(exc)}") from exc
        except BotoCoreError as exc:
            raise NotificationStoreError(f"stream lease delete failed: {type(exc).__name__}") from exc

    def end(self, session_id: str) -> int:
        """DELETE of the session: every subscription and the lease go (the stream then ends)."""
        params: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": ts.PK, "#sk": ts.SK},
            "ExpressionAttributeValues": to_item({":pk": ts.subscriptions_pk(session_id)}),
            "ProjectionExpression": "#pk, #sk",
            "ConsistentRead": True,
        }
        deleted = 0
        while True:
            response = self._call("query", **params)
            for key in response.get("Items", []):
                self._call("delete_item", TableName=self.table_name, Key=key)
                deleted += 1
            if "LastEvaluatedKey" not in response:
                return deleted
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def _call(self, operation: str, **params: Any) -> dict[str, Any]:
        with translated(NotificationStoreError, f"subscriptions {operation}"):
            return self.gateway.call(operation, **params)

    def _put(self, session_id: str, uri: str, owner: str, since: float) -> None:
        item = {
            ts.PK: ts.subscriptions_pk(session_id),
            ts.SK: ts.subscription_sk(uri),
            ts.URI: uri,
            ts.OWNER: owner,
            SINCE: since,
            ts.TTL: require_epoch_seconds(math.floor(self.clock.now()) + self.ttl_seconds),
        }
        self._call("put_item", TableName=self.table_name, Item=to_item(item))


class LiveSessions:
    """Whether a transport session is still live (``application.notifications.ports.SessionLiveness``):
    one consistent read of the session (X4: it may have ended on another instance)."""

    def __init__(self, sessions: SessionRepository) -> None:
        self.sessions = sessions

    def alive(self, session_id: str, owner: str) -> bool:
        try:
            with translated(NotificationStoreError, "session read"):
                self.sessions.get_session(session_id, owner=owner, consistent=True)
        except SessionNotFound:
            return False
        return True
