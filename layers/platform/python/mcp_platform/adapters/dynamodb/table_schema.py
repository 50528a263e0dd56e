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
``session#<id>``            ``tool#<ISO8601>#<toolCallId>``        immutable tool-call record (D1):
                                                                   arguments, outcome, the size
                                                                   of the result and its marker
``session#<id>``            ``toolcall#<toolCallId>``              idempotency marker of a tool
                                                                   call id (D4): points at the
                                                                   record, holds the result; none
                                                                   for a fresh id (its record
                                                                   holds the result)
``session#<id>``            ``cancel#<sha256(request id)>``        short-lived cancel flag of a
                                                                   2025 request (owner, ttl)
``apikey#<sha256>``         ``metadata``                           hashed API key -> principal
``usage#<principal>``       ``<YYYY-MM-DD>#<tool>``                usage counters (ingest)
``usage#<principal>``       ``quota#<YYYY-MM>``                    the month's and each day's
                                                                   calls (ingest, quotas on)
``event#<eventId>``         ``dedupe``                             ingest dedupe marker (of a
                                                                   committed call's event)
``ingest#<shard>``          ``checkpoint``                         the last stream record whose
                                                                   usage ingest applied (``seq``)
``notify#<topic>``          ``<ISO8601 µs>#<random hex>``          notification-log entry: a
                                                                   resource update (topic
                                                                   ``resource#<sha256(uri)>``) or a
                                                                   list change (topic ``lists``)
``subs#<session id>``       ``uri#<sha256(uri)>``                  a 2025 resources/subscribe of a
                                                                   transport session (uri, owner)
``subs#<session id>``       ``stream``                             which GET stream of the session
                                                                   delivers (holder, owner, ttl)
``reply#<session id>``      ``<sha256(request id)>``               a 2025 server-to-client request
                                                                   awaiting its answer (owner,
                                                                   method, ttl; then ``response``)
``rstate#<nonce>``          ``used``                               a consumed 2026 requestState
                                                                   (ttl: its expiry + a margin)
``task#<task id>``         ``task``                               a task of the tasks extension:
                                                                   owner, task_status, request,
                                                                   result or error, ttl
``oauthclient#<client id>`` ``oauth``                              a client registered at the
                                                                   OAuth facade (RFC 7591), ttl
``oauthreq#<request id>``   ``oauth``                              an authorization in progress
                                                                   (consent, upstream sign-in)
``oauthcode#<sha256>``      ``oauth``                              an authorization code (one-time)
``oauthfam#<grant id>``     ``oauth``                              one sign-in's refresh grant
``oauthrt#<sha256>``        ``oauth``                              a refresh token (rotated)
==========================  =====================================  ===============================

Only ``session#`` items are audited; the audit processor skips every other prefix (the OAuth
facade's items included: they hold only digests of codes and tokens, never the values). The
notification log and the subscription items are kept out of ``session#`` on purpose: they churn
(a lease per stream, an entry per change) and carry no session state worth an audit trail;
so are the interactive items (``reply#``, ``rstate#``): short-lived transport plumbing. Task
items keep their state in ``task_status``, not ``status``, so they never enter the status/ttl
GSI (D8) that finds expiring sessions; a session tool run as a task is audited through its
session's own items like any other call.
"""

from __future__ import annotations

import hashlib
import json
import re

from mcp_platform.application.sessions.model import CONTEXT_ITEM_PREFIX as CONTEXT_ITEM_PREFIX
from mcp_platform.application.sessions.model import KIND_APPLICATION as KIND_APPLICATION
from mcp_platform.application.sessions.model import KIND_TRANSPORT as KIND_TRANSPORT
from mcp_platform.application.sessions.model import STATUS_ACTIVE as STATUS_ACTIVE
from mcp_platform.application.sessions.model import STATUS_ENDED as STATUS_ENDED
from mcp_platform.application.sessions.model import TOOL_CALL_MARKER_PREFIX as TOOL_CALL_MARKER_PREFIX
from mcp_platform.application.sessions.model import TOOL_RECORD_PREFIX as TOOL_RECORD_PREFIX
from mcp_platform.application.sessions.model import context_item_sk as context_item_sk
from mcp_platform.application.sessions.model import tool_call_marker_sk as tool_call_marker_sk
from mcp_platform.application.sessions.model import tool_record_sk as tool_record_sk
from mcp_platform.protocol import trace_context

# -- session table -------------------------------------------------------------------------
PK = "pk"
SK = "sk"
TTL = "ttl"  # epoch seconds (D5)
STATUS = "status"
VERSION = "version"
OWNER = "owner"
# ``context``: on a context item (``ctx#<ISO8601>#<id>``), the entries one write appended; on a
# metadata item written before the context items, the whole context list (read, never written).
CONTEXT = "context"
CONTEXT_BYTES = "context_bytes"  # stored size of the context, kept by every write that grows it
CONTEXT_ITEMS = "context_items"  # on the metadata: how many context items the session holds
TOOL_CALLS = "tool_calls"  # committed tool calls of the session (metadata counter)
# Per-attribute versions: name -> committed changes of ``attributes[name]`` (sessions.store).
ATTRIBUTE_VERSIONS = "attribute_versions"
KIND = "kind"  # "application" | "transport"
CREATED_AT = "created_at"
UPDATED_AT = "updated_at"
# W3C trace context of the request that wrote an item (protocol.trace_context): on a tool-call
# record, its marker, the ingest's dedupe marker and a task, the request that made them; on a
# session's metadata, the request of its last commit (audit names the trace of a change by it).
TRACE_ID = trace_context.TRACE_ID
SPAN_ID = trace_context.SPAN_ID

SESSION_PREFIX = "session#"
METADATA_SK = "metadata"
CANCEL_FLAG_PREFIX = "cancel#"
API_KEY_PREFIX = "apikey#"
USAGE_PREFIX = "usage#"
EVENT_DEDUPE_PREFIX = "event#"
NOTIFY_PREFIX = "notify#"
SUBSCRIPTIONS_PREFIX = "subs#"
SUBSCRIPTION_URI_PREFIX = "uri#"
SUBSCRIPTION_STREAM_SK = "stream"

# GSI for "sessions expiring in the next N minutes" (D8)
STATUS_TTL_INDEX = "status-ttl-index"

# The values of ``status`` (STATUS_ACTIVE, STATUS_ENDED) and ``kind`` (KIND_APPLICATION,
# KIND_TRANSPORT), and the sort keys of a tool call's record and marker (TOOL_RECORD_PREFIX,
# tool_record_sk, TOOL_CALL_MARKER_PREFIX, tool_call_marker_sk) are the session domain's,
# imported above: one spelling, there.

# -- audit table (A3) ------------------------------------------------------------------------
# pk = "session#<id>", sk = "<ISO8601 change time>#<stream SequenceNumber>": a session's trail
# is one Query in time order; the SequenceNumber makes the key unique and idempotent (A2).
AUDIT_PK = "pk"
AUDIT_SK = "sk"
AUDIT_TTL = "ttl"
# A tenant's sessions: the audit records of a tenant's session metadata (and its summary) carry
# ``tenant``, the key of a sparse index (keys only) that lists them; each session's trail is then
# its own Query. Records of sessions without a tenant never enter it.
AUDIT_TENANT = "tenant"
AUDIT_TENANT_INDEX = "tenant-index"


# Session ids (transport sessions and application handles alike) are minted as
# ``secrets.token_urlsafe(SESSION_ID_ENTROPY_BYTES)``: exactly 32 characters of the URL-safe
# base64 alphabet. Nothing else can name a session, so anything else is "not found" before a key
# is built: client-chosen bytes never reach a DynamoDB key (real DynamoDB refuses key values over
# 2,048 bytes with a ValidationException, which moto does not).
SESSION_ID_ENTROPY_BYTES = 24
SESSION_ID_LENGTH = 32
_SESSION_ID = re.compile(rf"[A-Za-z0-9_-]{{{SESSION_ID_LENGTH}}}")


def is_session_id(value: object) -> bool:
    return isinstance(value, str) and _SESSION_ID.fullmatch(value) is not None


def session_pk(session_id: str) -> str:
    return f"{SESSION_PREFIX}{session_id}"


def session_id_from_pk(pk: str) -> str:
    if not pk.startswith(SESSION_PREFIX):
        raise ValueError(f"not a session key: {pk!r}")
    return pk[len(SESSION_PREFIX) :]


def cancel_flag_sk(request_id: str | int) -> str:
    """The JSON-RPC request id is chosen by the client (any string, any length): its digest
    keeps the key short, and digesting its JSON form keeps ``1`` and ``"1"`` apart."""
    digest = hashlib.sha256(json.dumps(request_id).encode()).hexdigest()[:32]
    return f"{CANCEL_FLAG_PREFIX}{digest}"


# -- audit table: key helpers and the per-session summary item (A3, A4) ------------------------
# Stream sequence numbers are decimal strings of 21-40 digits; zero-padding them to the maximum
# width makes the string order of the sort key equal to the numeric order within one second.
AUDIT_SEQUENCE_WIDTH = 40
# The summary item written when a session expires by TTL (A4). Trail sort keys start with the
# ISO year (a digit), which sorts before any letter, so ``sk < "summary"`` selects the trail only.
AUDIT_SUMMARY_SK = "summary"
# userIdentity of a REMOVE performed by DynamoDB's TTL process (A4).
TTL_PRINCIPAL = "dynamodb.amazonaws.com"
TTL_IDENTITY_TYPE = "Service"


def audit_sk(change_time_iso: str, sequence_number: str) -> str:
    return f"{change_time_iso}#{sequence_number.zfill(AUDIT_SEQUENCE_WIDTH)}"


# -- session table: further attribute names ----------------------------------------------------
ATTRIBUTES = "attributes"  # free-form map on the metadata item
TOOL_CALL_ID = "tool_call_id"
TOOL_NAME = "tool_name"
ARGUMENTS = "arguments"
# The one stored copy of a call's result: on its marker (replay reads it), or on its record when
# the call has no marker (a fresh id, which no retry can carry).
RESULT = "result"
# On the record only: the call's tool-call event (K10). The commit stores it with the record, so the
# table stream carries every committed call's event to the audit function, which relays what ingest
# has not counted: an instance that dies before its flush loses nothing. A map of the event's fields
# the record does not already hold (sessions/items.py: committed_event_attribute), or, as releases up
# to 0.3 wrote it and still read it, the whole wire JSON as a string.
COMMITTED_EVENT = "event"
RESULT_SK = "result_sk"  # on a record: the sk of the marker that holds its result
RESULT_BYTES = "result_bytes"  # on a record: the stored size of that result
IS_ERROR = "is_error"
STARTED_AT = "started_at"
FINISHED_AT = "finished_at"
COMMITTED_AT = "committed_at"
RECORD_SK = "record_sk"  # on the tool-call marker: the sk of the record it points at
REQUEST_HASH = "request_hash"  # on the tool-call marker: digest of the tool name + arguments
REQUESTED_AT = "requested_at"  # on a cancel flag: when the cancellation arrived (ISO 8601)
# Non-key attributes projected into STATUS_TTL_INDEX (the data construct must match; D8).
# Tool-call records and markers carry neither ``status`` nor ``ttl``, so they never enter it.
STATUS_TTL_INDEX_PROJECTION = (OWNER, KIND)


# -- ingest: dedupe markers and usage counters (tool-event pipeline) -------------------------
EVENT_DEDUPE_SK = "dedupe"
EVENT_ID = "event_id"
PRINCIPAL = "principal"
# Counters on the usage item (pk=usage#<principal>, sk=<YYYY-MM-DD>#<tool>), all ADDed.
USAGE_CALLS = "calls"
USAGE_ERRORS = "errors"
USAGE_REQUEST_BYTES = "request_bytes"
USAGE_RESPONSE_BYTES = "response_bytes"
USAGE_DURATION_MS = "duration_ms"


def event_dedupe_pk(event_id: str) -> str:
    return f"{EVENT_DEDUPE_PREFIX}{event_id}"


# The ingest checkpoint of one shard of the event stream (pk=ingest#<stream>/<shard id>,
# sk=checkpoint): ``seq``, the sequence number of the last record whose usage was applied.
INGEST_CHECKPOINT_PREFIX = "ingest#"
INGEST_CHECKPOINT_SK = "checkpoint"
CHECKPOINT_SEQUENCE = "seq"


def ingest_checkpoint_pk(shard: str) -> str:
    return f"{INGEST_CHECKPOINT_PREFIX}{shard}"


def usage_pk(principal: str) -> str:
    return f"{USAGE_PREFIX}{principal}"


def usage_sk(day_iso: str, tool: str) -> str:
    return f"{day_iso}#{tool}"


# The quota totals (pk=usage#<principal>, sk=quota#<YYYY-MM>): the month's calls in ``calls``,
# each day's in ``d<DD>``; ingest ADDs to them when quotas are on, one read answers both quotas.
USAGE_TOTALS_PREFIX = "quota#"


def usage_totals_sk(month: str) -> str:
    return f"{USAGE_TOTALS_PREFIX}{month}"


def usage_day_attribute(day_iso: str) -> str:
    """The attribute of one day's calls on its month's totals item: ``d07`` for the 7th."""
    return f"d{day_iso[8:10]}"


# -- rate-limit counters (their own table, LIMITS_TABLE_NAME): pk only, a ttl ----------------
# pk = "<rule key>/<period>#<window start, epoch seconds>#<subject>"; ``n`` admissions so far.
RATE_COUNT = "n"
MAX_RATE_SUBJECT_CHARS = 256  # longer subjects (client ids that are URLs) are counted by digest


def rate_window_pk(rule_key: str, period: str, window_start: int, subject: str) -> str:
    if len(subject) > MAX_RATE_SUBJECT_CHARS:
        subject = "sha256:" + hashlib.sha256(subject.encode()).hexdigest()
    return f"{rule_key}/{period}#{window_start}#{subject}"


# -- notification log and subscriptions (stack option ``subscriptions``) -----------------------
NOTIFY_TOPIC_LISTS = "lists"
URI = "uri"  # a notification's resource URI / a subscription's URI
NOTICE_KIND = "notice"  # "resource" | "tools" | "prompts" | "resources"
HOLDER = "holder"  # on the stream lease: the id of the stream that delivers


def uri_digest(uri: str) -> str:
    """Resource URIs are chosen by clients and tools (any length): keys hold their digest."""
    return hashlib.sha256(uri.encode()).hexdigest()[:32]


def notify_pk(topic: str) -> str:
    return f"{NOTIFY_PREFIX}{topic}"


def resource_topic(uri: str, audience: str) -> str:
    """The log topic of ``uri``'s updates for ``audience``: "" for every subscriber (a resource
    that reads the same for everyone), else the one principal whose streams may see them."""
    scoped = uri if not audience else json.dumps([audience, uri])
    return f"resource#{uri_digest(scoped)}"


def subscriptions_pk(session_id: str) -> str:
    return f"{SUBSCRIPTIONS_PREFIX}{session_id}"


def subscription_sk(uri: str) -> str:
    return f"{SUBSCRIPTION_URI_PREFIX}{uri_digest(uri)}"


# -- interactive tools (mcp_platform.application.interactive) ---------------------------------------------
CLIENT_REPLY_PREFIX = "reply#"
REQUEST_STATE_PREFIX = "rstate#"
REQUEST_STATE_USED_SK = "used"
REPLY_METHOD = "method"  # on a reply item: the method of the server's request
REPLY_RESPONSE = "response"  # on a reply item: the client's JSON-RPC response (JSON text), once given


def client_reply_pk(session_id: str) -> str:
    return f"{CLIENT_REPLY_PREFIX}{session_id}"


def client_reply_sk(request_id: str | int) -> str:
    """The id's digest, as for cancel flags: short keys, and ``1`` and ``"1"`` kept apart."""
    return hashlib.sha256(json.dumps(request_id).encode()).hexdigest()[:32]


def request_state_pk(nonce: str) -> str:
    return f"{REQUEST_STATE_PREFIX}{nonce}"


# -- tasks extension (io.modelcontextprotocol/tasks) -----------------------------------------
TASK_PREFIX = "task#"
TASK_SK = "task"


def task_pk(task_id: str) -> str:
    return f"{TASK_PREFIX}{task_id}"


# -- OAuth authorization-server facade (mcp_platform.authorization_server) ------------------------------
# Codes and tokens are keyed by their SHA-256: a table read reveals none of them.
OAUTH_SK = "oauth"
OAUTH_CLIENT_PREFIX = "oauthclient#"
OAUTH_REQUEST_PREFIX = "oauthreq#"
OAUTH_CODE_PREFIX = "oauthcode#"
OAUTH_GRANT_PREFIX = "oauthfam#"
OAUTH_REFRESH_PREFIX = "oauthrt#"
