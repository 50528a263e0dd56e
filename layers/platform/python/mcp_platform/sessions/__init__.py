"""Session store: DynamoDB session state with optimistic locking, idempotent tool calls,
transactions, TTL and optional DAX (SPEC.md D1-D11, X3-X5). See :mod:`.store`."""

from mcp_platform.sessions.clients import DynamoClients, build_dynamo_clients
from mcp_platform.sessions.clock import Clock, ManualClock, SystemClock
from mcp_platform.sessions.errors import (
    CancellationReason,
    DuplicateToolCall,
    IdempotencyTokenReused,
    InvalidCursor,
    InvalidTtl,
    PreconditionFailed,
    SessionAlreadyExists,
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
from mcp_platform.sessions.gateway import DynamoGateway
from mcp_platform.sessions.model import (
    CommitResult,
    ConditionCheck,
    ExpiringSession,
    ExtraPut,
    Session,
    ToolCall,
    ToolCallPage,
    ToolCallRecord,
    ToolCallResult,
)
from mcp_platform.sessions.retry import Backoff
from mcp_platform.sessions.store import SessionStore

__all__ = [
    "Backoff",
    "CancellationReason",
    "Clock",
    "CommitResult",
    "ConditionCheck",
    "DuplicateToolCall",
    "DynamoClients",
    "DynamoGateway",
    "ExpiringSession",
    "ExtraPut",
    "IdempotencyTokenReused",
    "InvalidCursor",
    "InvalidTtl",
    "ManualClock",
    "PreconditionFailed",
    "Session",
    "SessionAlreadyExists",
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
