"""Session lifecycle operations: create, get, append, versioned update, extend, end, expiring."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.adapters.dynamodb.aws_errors import error_code, old_item
from mcp_platform.adapters.dynamodb.codec import from_attr, require_epoch_seconds, to_attr
from mcp_platform.adapters.dynamodb.sessions.items import meta_key, session_item
from mcp_platform.adapters.dynamodb.sessions.table import CONTEXT_HAS_ROOM, SessionTable, context_item
from mcp_platform.application.sessions.errors import (
    ExpiryNotExtended,
    SessionAlreadyExists,
    SessionCapacityExceeded,
    StoreUnavailable,
    VersionConflict,
)
from mcp_platform.application.sessions.model import (
    KIND_APPLICATION,
    STATUS_ACTIVE,
    STATUS_ENDED,
    ExpiringSession,
    Session,
)

_CCF = "ConditionalCheckFailedException"


class SessionLifecycle:
    """A session's life: created, read, appended to, updated under its version, extended, ended;
    and the sessions about to expire."""

    def __init__(self, table: SessionTable) -> None:
        self.table = table

    def create_session(
        self,
        owner: str,
        *,
        session_id: str | None = None,
        kind: str = KIND_APPLICATION,
        attributes: dict[str, Any] | None = None,
    ) -> Session:
        """Put a new metadata item (version 1) with ``attribute_not_exists(pk)``."""
        new_id = self.table.new_session_id(owner, kind, session_id)
        ttl = self.table.next_ttl()  # D5: refuses a millisecond value before anything is written
        now = self.table.iso_now()
        session = Session(
            id=new_id,
            owner=owner,
            status=STATUS_ACTIVE,
            version=1,
            ttl=ttl,
            context=[],
            kind=kind,
            attributes=dict(attributes or {}),
            created_at=now,
            updated_at=now,
            attribute_versions={},
        )
        item = session_item(session)
        try:
            self.table.gateway.call(
                "put_item",
                TableName=self.table.table_name,
                Item=item,
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": ts.PK},
            )
        except ClientError as exc:
            if error_code(exc) == _CCF:
                raise SessionAlreadyExists(session.id) from exc
            raise
        return session

    def append_context(self, session_id: str, messages: Sequence[Any], *, owner: str | None = None) -> int:
        """D3 (as amended): no read, two writes. One UpdateItem of the metadata, conditioned on
        "alive" and the context byte budget, counts the entries and bumps the version (returned);
        then the entries are Put as a context item keyed by the time and that version. The
        metadata goes first so that nothing the budget or the session's state refuses is ever
        visible; should the Put not happen (the process dies in between), the append is lost
        and the caller, who got no answer, is left with a version and a size counted for
        nothing (a tool call's append is one transaction: :meth:`ToolCallCommits.commit`). In the
        list layout (``compatible_with=0.1``) the one UpdateItem appends them to the
        metadata's list (D3 as releases before the context items wrote it) and nothing is Put."""
        entries = list(messages)
        clause, names, values = self.table.context_growth(session_id, entries)
        now = self.table.iso_now()
        response = self._update_if_alive(
            session_id,
            owner,
            f"SET {clause}, #v = #v + :one, #ua = :ua",
            {**names, "#v": ts.VERSION, "#ua": ts.UPDATED_AT},
            {**values, ":one": to_attr(1), ":ua": to_attr(now)},
            also=CONTEXT_HAS_ROOM,
            ReturnValues="UPDATED_NEW",
        )
        version = int(from_attr(response["Attributes"][ts.VERSION]))
        if self.table.listed(entries) is not None:
            return version
        sk = ts.context_item_sk(now, f"v{version:012d}")
        self.table.gateway.call("put_item", TableName=self.table.table_name, Item=context_item(session_id, sk, entries))
        return version

    def update_metadata(
        self,
        session_id: str,
        mutate: Callable[[Session], Session],
        *,
        owner: str | None = None,
        current: Session | None = None,
    ) -> Session:
        """D2: ConsistentRead read (skipped when ``current`` is given), ``#v = :expected``,
        ``SET #v = #v + :one``; on a lost race re-read, recompute, retry (3x, 50 ms backoff),
        then VersionConflict. ``mutate`` may change status and attributes (the context only grows,
        by appends). The session is read with its context when not given (``current``)."""
        session = current if current is not None else self.table.get_session(session_id, owner=owner, consistent=True)
        expected = session.version
        for _ in self.table.backoff.attempts():
            expected = session.version
            changed = mutate(session)
            if (changed.id, changed.owner, changed.kind, changed.created_at) != (
                session.id,
                session.owner,
                session.kind,
                session.created_at,
            ):
                raise ValueError("mutate may not change id, owner, kind or created_at")
            if changed.context != session.context:
                # D1/D3 as amended: the context is kept in items appended by commits, never
                # rewritten (a rewrite would cost what the whole context weighs).
                raise ValueError("mutate may not change the context: append to it (append_context, a commit)")
            try:
                return self._write_version(session, changed, owner)
            except ClientError as exc:
                if error_code(exc) != _CCF:
                    raise
                item = old_item(exc) or self.table.read_item(session_id, consistent=True)
                session = self.table.visible(session_id, item, owner)  # not alive any more: raise
                if item is not None:
                    session = self.table.with_context(session, item, consistent=True)
        raise VersionConflict(session_id, expected, session)

    def _write_version(self, session: Session, changed: Session, owner: str | None) -> Session:
        condition, names, values = self.table.alive(owner)
        now = self.table.iso_now()
        # Under ``#v = :expected`` the held attributes are exactly the stored ones, so the
        # attribute versions can be computed here: one more for each attribute that changes.
        versions = session.versions_after(changed.attributes)
        names.update(
            {
                "#v": ts.VERSION,
                "#at": ts.ATTRIBUTES,
                "#avs": ts.ATTRIBUTE_VERSIONS,
                "#ua": ts.UPDATED_AT,
            }
        )
        values.update(
            {
                ":expected": to_attr(session.version),
                ":one": to_attr(1),
                ":at": to_attr(changed.attributes),
                ":avs": to_attr(versions),
                ":status": to_attr(changed.status),
                ":ua": to_attr(now),
            }
        )
        self.table.gateway.call(
            "update_item",
            TableName=self.table.table_name,
            Key=meta_key(session.id),
            UpdateExpression=("SET #v = #v + :one, #at = :at, #avs = :avs, #st = :status, #ua = :ua"),
            ConditionExpression=f"{condition} AND #v = :expected",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        return replace(changed, version=session.version + 1, updated_at=now, attribute_versions=versions)

    def extend_expiry(self, session_id: str, *, owner: str | None = None, seconds: int | None = None) -> int:
        """D7: ``SET #ttl = :new`` only if ``attribute_exists(pk) AND #ttl > :now`` (and active).
        An expired session is never resurrected. Returns the new ttl. The version is unchanged:
        it guards context/status/attributes, and the ttl is written by condition alone."""
        if seconds is not None and seconds <= 0:
            raise ValueError(f"seconds must be positive, got {seconds}")
        new_ttl = self.table.next_ttl(seconds)
        self._update_if_alive(session_id, owner, "SET #ttl = :ttl", {}, {":ttl": to_attr(new_ttl)})
        return new_ttl

    def slide_expiry(self, session: Session, *, owner: str | None = None) -> Session:
        """D7 for a call that commits nothing (a read-only tool): ``session`` with its ttl slid
        forward, written only when less than half of the lifetime remains, so a session that is
        only read costs one small write per half lifetime, not one per call (no AWS call
        otherwise). A ttl-only UpdateItem: no version is touched, so it never conflicts with a
        commit's conditions; conditioned on alive (an expired session is never resurrected) and
        on moving the ttl forward (a later extension is never undone)."""
        if (session.ttl - self.table.now()) * 2 >= self.table.ttl_seconds:
            return session
        new_ttl = self.table.next_ttl()
        condition, names, values = self.table.alive(owner)
        try:
            self.table.gateway.call(
                "update_item",
                TableName=self.table.table_name,
                Key=meta_key(session.id),
                UpdateExpression="SET #ttl = :ttl",
                ConditionExpression=f"{condition} AND #ttl < :ttl",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={**values, ":ttl": to_attr(new_ttl)},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if error_code(exc) != _CCF:
                raise ExpiryNotExtended(f"{session.id}: {error_code(exc)}") from exc
            item = old_item(exc) or self.table.read_item(session.id, consistent=True)
            current = self.table.visible(session.id, item, owner)  # not alive any more: raise
            return replace(session, ttl=max(session.ttl, current.ttl))  # extended further meanwhile
        except (BotoCoreError, StoreUnavailable) as exc:  # DynamoDB failed or was not reached: the same
            raise ExpiryNotExtended(f"{session.id}: {exc}") from exc
        return replace(session, ttl=new_ttl)

    def end_session(self, session_id: str, *, owner: str | None = None) -> None:
        """Mark the session ended (it leaves the ``active`` partition of the index)."""
        self._update_if_alive(
            session_id,
            owner,
            "SET #st = :ended, #v = #v + :one, #ua = :ua",
            {"#v": ts.VERSION, "#ua": ts.UPDATED_AT},
            {":ended": to_attr(STATUS_ENDED), ":one": to_attr(1), ":ua": to_attr(self.table.iso_now())},
        )

    def _update_if_alive(
        self,
        session_id: str,
        owner: str | None,
        expression: str,
        names: dict[str, str],
        values: dict[str, Any],
        also: str = "",
        **extra: Any,
    ) -> dict[str, Any]:
        """One UpdateItem conditioned on "alive" (D7) and ``also``; a failed condition is
        explained by the item DynamoDB returns (ALL_OLD): the precise not-alive error, or, for a
        live session, the context budget (the only other condition used)."""
        condition, alive_names, alive_values = self.table.alive(owner)
        if also:
            condition += f" AND {also}"
        try:
            return self.table.gateway.call(
                "update_item",
                TableName=self.table.table_name,
                Key=meta_key(session_id),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames={**alive_names, **names},
                ExpressionAttributeValues={**alive_values, **values},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **extra,
            )
        except ClientError as exc:
            if error_code(exc) == _CCF:
                item = old_item(exc)
                if also and item is not None:
                    self.table.visible(session_id, item, owner)  # raises unless alive and owned
                    raise SessionCapacityExceeded(session_id, "context", self.table.context_budget_bytes) from exc
                self.table.raise_not_alive(session_id, item, owner)
            raise

    def expiring_within(self, minutes: int, *, status: str = STATUS_ACTIVE, limit: int = 100) -> list[ExpiringSession]:
        """D8: sessions whose ttl falls in (now, now + minutes], from the status/ttl index.
        Already-expired items are excluded by the key condition and filtered again (D6)."""
        now = self.table.now()
        params: dict[str, Any] = {
            "TableName": self.table.table_name,
            "IndexName": ts.STATUS_TTL_INDEX,
            "KeyConditionExpression": "#st = :st AND #ttl BETWEEN :lo AND :hi",
            "ExpressionAttributeNames": {"#st": ts.STATUS, "#ttl": ts.TTL},
            "ExpressionAttributeValues": {
                ":st": to_attr(status),
                ":lo": to_attr(now + 1),
                ":hi": to_attr(require_epoch_seconds(now + minutes * 60)),
            },
        }
        found: list[ExpiringSession] = []
        while len(found) < limit:
            response = self.table.gateway.call("query", Limit=limit - len(found), **params)
            for raw in response.get("Items", []):
                row = {name: from_attr(attr) for name, attr in raw.items()}
                if int(row[ts.TTL]) > self.table.clock.now() and row[ts.PK].startswith(ts.SESSION_PREFIX):
                    found.append(
                        ExpiringSession(
                            session_id=ts.session_id_from_pk(row[ts.PK]),
                            status=row[ts.STATUS],
                            ttl=int(row[ts.TTL]),
                            owner=row.get(ts.OWNER, ""),
                            kind=row.get(ts.KIND, ""),
                        )
                    )
            if "LastEvaluatedKey" not in response:
                break
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return found
