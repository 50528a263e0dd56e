"""Key layout and attribute names of the platform's DynamoDB tables (the one contract).

The CDK data construct, the local emulator, the session store, the ingest function, the audit
processor and the API-key store all read their names from here.

Session table (single-table design, D1):

==========================  =====================================  ===============================
pk                          sk                                     item
==========================  =====================================  ===============================
``session#<id>``            ``metadata``                           mutable session metadata (D1):
                                                                   status, owner, version, ttl,
                                                                   context, kind, ...
``session#<id>``            ``tool#<ISO8601>#<toolCallId>``        immutable tool-call record (D1)
``session#<id>``            ``toolcall#<toolCallId>``              idempotency marker of a tool
                                                                   call id (D4): points at the
                                                                   record, holds the result
``apikey#<sha256>``         ``metadata``                           hashed API key -> principal
``usage#<principal>``       ``<YYYY-MM-DD>#<tool>``                usage counters (ingest)
``event#<eventId>``         ``dedupe``                             ingest dedupe marker
==========================  =====================================  ===============================

Only ``session#`` items are audited; the audit processor skips every other prefix.
"""

from __future__ import annotations

# -- session table -------------------------------------------------------------------------
PK = "pk"
SK = "sk"
TTL = "ttl"  # epoch seconds (D5)
STATUS = "status"
VERSION = "version"
OWNER = "owner"
CONTEXT = "context"
KIND = "kind"  # "application" | "transport"
CREATED_AT = "created_at"
UPDATED_AT = "updated_at"

SESSION_PREFIX = "session#"
METADATA_SK = "metadata"
TOOL_RECORD_PREFIX = "tool#"
TOOL_CALL_MARKER_PREFIX = "toolcall#"
API_KEY_PREFIX = "apikey#"
USAGE_PREFIX = "usage#"
EVENT_DEDUPE_PREFIX = "event#"

# GSI for "sessions expiring in the next N minutes" (D8)
STATUS_TTL_INDEX = "status-ttl-index"

STATUS_ACTIVE = "active"
STATUS_ENDED = "ended"

KIND_APPLICATION = "application"
KIND_TRANSPORT = "transport"

# -- audit table (A3) ------------------------------------------------------------------------
# pk = "session#<id>", sk = "<ISO8601 change time>#<stream SequenceNumber>": a session's trail
# is one Query in time order; the SequenceNumber makes the key unique and idempotent (A2).
AUDIT_PK = "pk"
AUDIT_SK = "sk"
AUDIT_TTL = "ttl"


def session_pk(session_id: str) -> str:
    return f"{SESSION_PREFIX}{session_id}"


def session_id_from_pk(pk: str) -> str:
    if not pk.startswith(SESSION_PREFIX):
        raise ValueError(f"not a session key: {pk!r}")
    return pk[len(SESSION_PREFIX) :]


def tool_record_sk(started_at_iso: str, tool_call_id: str) -> str:
    return f"{TOOL_RECORD_PREFIX}{started_at_iso}#{tool_call_id}"


def tool_call_marker_sk(tool_call_id: str) -> str:
    return f"{TOOL_CALL_MARKER_PREFIX}{tool_call_id}"
