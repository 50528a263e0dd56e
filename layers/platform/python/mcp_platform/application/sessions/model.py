"""The session domain: a session's state, its tool calls, and what "alive" means.

Plain values: how they are stored (item layout, attribute names) is the adapter's business
(:mod:`mcp_platform.adapters.dynamodb.sessions.items`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mcp_platform.application.events.schema import ToolCallEvent
from mcp_platform.protocol.jsonrpc import JSONObject, JSONValue

# A session's lifecycle status: active until ended explicitly (or expired by its ttl).
STATUS_ACTIVE = "active"
STATUS_ENDED = "ended"

# What a session is for: an application session (a handle tools pass around) or the 2025
# transport session behind an ``Mcp-Session-Id``.
KIND_APPLICATION = "application"
KIND_TRANSPORT = "transport"
SESSION_KINDS = (KIND_APPLICATION, KIND_TRANSPORT)

# A tool call's immutable items are keyed within their session (D1, D4): the record by its start
# and id, so a session's records sort in time order; the marker by the id alone, so a replay
# finds it (the layout of the table: ``adapters.dynamodb.table_schema``). A call under a fresh id,
# which no retry can carry, has no marker: its record holds its result.
TOOL_RECORD_PREFIX = "tool#"
TOOL_CALL_MARKER_PREFIX = "toolcall#"
# A session's context is kept as items of its own, one per write that appends (D1/D3 as
# amended): keyed by the write's time and its call id (or a fresh id), so they read back in time
# order with one Query, and a commit writes what it appends, never the context before it.
CONTEXT_ITEM_PREFIX = "ctx#"


def tool_record_sk(started_at_iso: str, tool_call_id: str) -> str:
    """The sort key of a call's record: ``tool#<ISO8601 start>#<id>`` (D1)."""
    return f"{TOOL_RECORD_PREFIX}{started_at_iso}#{tool_call_id}"


def tool_call_marker_sk(tool_call_id: str) -> str:
    """The sort key of a call's idempotency marker: ``toolcall#<id>`` (D4)."""
    return f"{TOOL_CALL_MARKER_PREFIX}{tool_call_id}"


def context_item_sk(written_at_iso: str, writer_id: str) -> str:
    """The sort key of a context item: ``ctx#<ISO8601 write time>#<call id>`` (D1 as amended).
    The context is the entries of these items in the order of their keys: the time of the write
    that appended them, then its id."""
    return f"{CONTEXT_ITEM_PREFIX}{written_at_iso}#{writer_id}"


@dataclass(frozen=True)
class Session:
    """The metadata item of one session (``sk=metadata``, D1)."""

    id: str
    owner: str
    status: str
    version: int
    ttl: int
    context: list[JSONValue] = field(default_factory=list)
    """The context entries, oldest first (a list an item from before the context items kept,
    then the entries of the context items). Empty when loaded without its context: a session
    loaded for an append-only call (``load_for_tool_call(with_context=False)``)."""
    kind: str = KIND_APPLICATION
    attributes: JSONObject = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""
    tool_calls: int = 0
    context_bytes: int | None = None
    """The stored size of ``context`` as every write that grew it recorded it (None: an item
    written before it was kept); lets a commit size the item it updates without walking it."""
    attribute_versions: dict[str, int] | None = None
    """Per attribute name, how many committed changes ``attributes[name]`` has had (absent: 0);
    None for an item written before they were kept. The arithmetic: ``adapters.dynamodb.sessions.store``."""

    def is_alive(self, now: float) -> bool:
        """The session alive rule (D6/D7): active and its ttl still ahead of ``now``. The store's
        writes carry the same rule as their condition, built from the same constants."""
        return self.status == STATUS_ACTIVE and self.ttl > now

    def attribute_version(self, name: str) -> int:
        """The version of ``attributes[name]`` in this state (0: never changed)."""
        return (self.attribute_versions or {}).get(name, 0)

    def changed_attributes(self, seen: Mapping[str, int]) -> list[str]:
        """The names whose version here differs from the version ``seen`` (name -> version)."""
        return [name for name, version in seen.items() if self.attribute_version(name) != version]

    def versions_after(self, attributes: Mapping[str, Any]) -> dict[str, int]:
        """The attribute versions once ``attributes`` replace this state's attributes: one more
        for each name whose value changes (set, changed or removed), the others as they are."""
        versions = dict(self.attribute_versions or {})
        for name in self.attributes.keys() | attributes.keys():
            if name not in attributes or name not in self.attributes or attributes[name] != self.attributes[name]:
                versions[name] = versions.get(name, 0) + 1
        return versions

    def newest_with(self, other: Session) -> Session:
        """What two states of this session (read or committed at different times) tell together:
        the one with the higher version, with each attribute whose version is higher in the other
        taken from it (value and version together, so a commit conditioned on that version is
        still exact). Versions only grow, so the result is never older than either state."""
        newer, older = (other, self) if other.version > self.version else (self, other)
        if newer.attribute_versions is None or not older.attribute_versions:
            return newer
        fresher = [n for n, v in older.attribute_versions.items() if v > newer.attribute_version(n)]
        if not fresher:
            return newer
        attributes = dict(newer.attributes)
        for name in fresher:
            if name in older.attributes:
                attributes[name] = older.attributes[name]
            else:
                attributes.pop(name, None)
        versions = {**newer.attribute_versions, **{n: older.attribute_versions[n] for n in fresher}}
        return replace(newer, attributes=attributes, attribute_versions=versions)


@dataclass(frozen=True)
class ToolCall:
    """A finished tool invocation, as the endpoint hands it to the store to commit."""

    id: str
    name: str
    arguments: dict[str, Any]
    result: Any
    is_error: bool = False
    started_at: float | None = None  # epoch seconds; the store's clock when None
    finished_at: float | None = None
    request_hash: str = ""
    """Digest of what was asked (tool + arguments); a replay with another request is refused."""
    trace_id: str | None = None
    """The trace and span of the request that ran the call (``protocol.trace_context``): stored
    on the items its commit writes, so their audit records name the trace."""
    span_id: str | None = None
    event: ToolCallEvent | None = None
    """The call's tool-call event, committed with the record (K10): the table stream's relay
    emits it if the instance dies before its own flush."""
    replayable: bool = True
    """Whether a retry can carry this id (``PreparedCall.replayable``): its commit writes the
    marker a replay reads. False (a fresh id): no marker; the record holds the result."""


@dataclass(frozen=True)
class ToolCallResult:
    """What the idempotency marker (``sk=toolcall#<id>``) holds: enough to answer a replay."""

    tool_call_id: str
    tool_name: str
    result: Any
    is_error: bool
    record_sk: str
    committed_at: str
    request_hash: str = ""

    def answers(self, request_hash: str) -> bool:
        """Whether this committed call may answer a request with ``request_hash``: only the same
        request (tool and arguments) is a replay; another one reused the id."""
        return self.request_hash == request_hash


@dataclass(frozen=True)
class ToolCallRecord:
    """An immutable tool-call record (``sk=tool#<ISO8601>#<id>``, D1). Its result is stored once:
    in the marker ``result_sk`` names, or on the record itself when the call has no marker
    (``result_sk`` empty: a call under a fresh id; a record ingest wrote from an event holds none)."""

    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    is_error: bool
    started_at: str
    finished_at: str
    sk: str
    result_sk: str = ""
    result_bytes: int = 0


@dataclass(frozen=True)
class ToolCallPage:
    records: list[ToolCallRecord]
    next_cursor: str | None


@dataclass(frozen=True)
class ExpiringSession:
    """A row of the status/ttl index (D8): keys plus the projected attributes."""

    session_id: str
    status: str
    ttl: int
    owner: str
    kind: str


@dataclass(frozen=True)
class CommitResult:
    """The session after the commit (computed locally, no read) and the stored result."""

    session: Session
    result: ToolCallResult
    exact: bool = True
    """False unless committed under the session's version (append-only, or conditioned
    attribute by attribute): ``session`` is then a lower bound of what is stored."""
