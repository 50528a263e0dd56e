"""Session store: DynamoDB session state with optimistic locking, idempotent tool calls,
transactions, TTL and optional DAX (SPEC.md D1-D11, X3-X5). See :mod:`.store`.

The values, the errors and what a tool call changes (``SessionChanges`` and its intents,
``ExtraPut``, ``ConditionCheck``, ``AttributeWrites``) are the application's; they are
re-exported here for the store's callers."""

from mcp_platform.adapters.dynamodb.clients import DynamoClients, build_dynamo_clients
from mcp_platform.adapters.dynamodb.gateway import DynamoGateway
from mcp_platform.adapters.dynamodb.sessions.store import SessionStore
from mcp_platform.application.sessions.changes import AttributeWrites, ConditionCheck, ExtraPut, SessionChanges
from mcp_platform.application.sessions.errors import (
    CallRecordTooLarge,
    CancellationReason,
    DuplicateToolCall,
    IdempotencyKeyReused,
    IdempotencyTokenReused,
    InvalidCursor,
    InvalidTtl,
    PreconditionFailed,
    SessionAlreadyExists,
    SessionCapacityExceeded,
    SessionEnded,
    SessionExpired,
    SessionNotFound,
    SessionStoreError,
    StoreThrottled,
    TransactionConflict,
    TransactionFailed,
    TransactionTooLarge,
    VersionConflict,
)
from mcp_platform.application.sessions.model import (
    CommitResult,
    ExpiringSession,
    Session,
    ToolCall,
    ToolCallPage,
    ToolCallRecord,
    ToolCallResult,
)
from mcp_platform.application.sessions.retry import Backoff
from mcp_platform.protocol.clock import Clock, ManualClock, SystemClock

__all__ = [
    "AttributeWrites",
    "Backoff",
    "CallRecordTooLarge",
    "CancellationReason",
    "Clock",
    "CommitResult",
    "ConditionCheck",
    "DuplicateToolCall",
    "DynamoClients",
    "DynamoGateway",
    "ExpiringSession",
    "ExtraPut",
    "IdempotencyKeyReused",
    "IdempotencyTokenReused",
    "InvalidCursor",
    "InvalidTtl",
    "ManualClock",
    "PreconditionFailed",
    "Session",
    "SessionAlreadyExists",
    "SessionCapacityExceeded",
    "SessionChanges",
    "SessionEnded",
    "SessionExpired",
    "SessionNotFound",
    "SessionStore",
    "SessionStoreError",
    "StoreThrottled",
    "SystemClock",
    "ToolCall",
    "ToolCallPage",
    "ToolCallRecord",
    "ToolCallResult",
    "TransactionConflict",
    "TransactionFailed",
    "TransactionTooLarge",
    "VersionConflict",
    "build_dynamo_clients",
]
