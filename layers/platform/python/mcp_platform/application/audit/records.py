"""One DynamoDB Streams record, parsed from the Lambda event shape into what the audit needs.

The input is the plain mapping Lambda delivers (``{"eventID", "eventName", "dynamodb": {...}}``),
which is also what the local pollers build. Images stay in DynamoDB JSON (the wire form): the
diff compares them without converting, and the writer stores them verbatim, so only the values
that end up in the diff are ever deserialised.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_platform.adapters.dynamodb import table_schema as ts
from mcp_platform.protocol.clock import iso_utc

WireImage = Mapping[str, Mapping[str, Any]]

EVENT_NAMES = ("INSERT", "MODIFY", "REMOVE")


class MalformedStreamRecord(ValueError):
    """The record lacks a field every DynamoDB Streams record carries; it cannot be audited."""


@dataclass(frozen=True, slots=True)
class StreamChange:
    event_id: str
    event_name: str  # INSERT | MODIFY | REMOVE
    sequence_number: str
    change_epoch: float  # ApproximateCreationDateTime, epoch seconds
    pk: str
    sk: str
    old_image: WireImage | None
    new_image: WireImage | None
    user_identity: Mapping[str, Any] | None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> StreamChange:
        try:
            ddb = record["dynamodb"]
            keys = ddb["Keys"]
            event_name = record["eventName"]
            sequence_number = ddb["SequenceNumber"]
            pk = keys[ts.PK]["S"]
            sk = keys[ts.SK]["S"]
            change_epoch = float(ddb["ApproximateCreationDateTime"])
        except (KeyError, TypeError, ValueError) as exc:
            raise MalformedStreamRecord(f"not a DynamoDB stream record: missing or bad {exc}") from exc
        if event_name not in EVENT_NAMES:
            raise MalformedStreamRecord(f"unknown eventName {event_name!r}")
        if not (isinstance(sequence_number, str) and sequence_number.isdigit()):
            raise MalformedStreamRecord(f"bad SequenceNumber {sequence_number!r}")
        return cls(
            event_id=str(record.get("eventID", "")),
            event_name=event_name,
            sequence_number=sequence_number,
            change_epoch=change_epoch,
            pk=pk,
            sk=sk,
            old_image=ddb.get("OldImage"),
            new_image=ddb.get("NewImage"),
            user_identity=record.get("userIdentity"),
        )

    @property
    def session_id(self) -> str | None:
        """The session this change belongs to; None for non-session items (never audited)."""
        if not self.pk.startswith(ts.SESSION_PREFIX):
            return None
        return self.pk[len(ts.SESSION_PREFIX) :]

    @property
    def change_time_iso(self) -> str:
        # Fixed width (always milliseconds, always Z) so the audit sort key orders correctly.
        return iso_utc(self.change_epoch, "milliseconds")

    @property
    def is_ttl_removal(self) -> bool:
        """A REMOVE performed by DynamoDB's TTL process, as opposed to an explicit delete (A4)."""
        identity = self.user_identity
        return (
            self.event_name == "REMOVE"
            and identity is not None
            and identity.get("type") == ts.TTL_IDENTITY_TYPE
            and identity.get("principalId") == ts.TTL_PRINCIPAL
        )

    @property
    def is_session_expiry(self) -> bool:
        """TTL removed the session's metadata item: the session itself expired."""
        return self.is_ttl_removal and self.sk == ts.METADATA_SK and self.session_id is not None

    @property
    def who(self) -> dict[str, str]:
        # Streams carry an identity only for service deletes (TTL); every other change was made
        # by the platform's own functions on behalf of the session owner.
        if self.user_identity is None:
            return {"type": "Application"}
        return {
            "type": str(self.user_identity.get("type", "")),
            "principal_id": str(self.user_identity.get("principalId", "")),
        }
