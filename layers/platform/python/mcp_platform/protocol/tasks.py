"""A task of the tasks extension: what is stored, and how it reads on the wire.

Statuses: ``working`` (queued or running in the worker), ``input_required`` (the tool asked its
client; ``tasks/update`` answers), and the terminal ``completed`` (the tool's result, an
``isError`` result included), ``failed`` (a protocol-level error: the JSON-RPC error the call
would have answered) and ``cancelled``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp_platform.protocol.clock import iso_utc
from mcp_platform.protocol.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY, JSONObject, JsonRpcError

EXTENSION_ID = "io.modelcontextprotocol/tasks"
WORKING = "working"
INPUT_REQUIRED = "input_required"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
TERMINAL = frozenset({COMPLETED, FAILED, CANCELLED})
ACTIVE = (WORKING, INPUT_REQUIRED)
POLL_INTERVAL_MS = 1000
"""Suggested to clients between two ``tasks/get``: one consistent read each."""


@dataclass
class TaskRequest:
    """What the worker needs to run the call as the endpoint would have run it."""

    params: JSONObject
    """The tools/call params (name, arguments, _meta)."""
    tool_call_id: str
    """The id the call commits under (D4): a worker retry replays a committed call, never reruns it."""
    protocol_version: str
    modern: bool
    client_capabilities: JSONObject | None = None
    transport_session_id: str | None = None
    log_level: str | None = None
    traceparent: str | None = None
    """The span of the request that created the task (W3C, ``protocol.trace_context``): each run
    of the worker is a span of its own, called by it, so the task's trace is the call's."""
    tracestate: str | None = None

    def to_map(self) -> JSONObject:
        return {
            "params": self.params,
            "tool_call_id": self.tool_call_id,
            "protocol_version": self.protocol_version,
            "modern": self.modern,
            "client_capabilities": self.client_capabilities,
            "transport_session_id": self.transport_session_id,
            "log_level": self.log_level,
            "traceparent": self.traceparent,
            "tracestate": self.tracestate,
        }

    @classmethod
    def from_map(cls, raw: dict[str, Any]) -> TaskRequest:
        return cls(
            params=dict(raw["params"]),
            tool_call_id=str(raw["tool_call_id"]),
            protocol_version=str(raw["protocol_version"]),
            modern=bool(raw["modern"]),
            client_capabilities=raw.get("client_capabilities"),
            transport_session_id=raw.get("transport_session_id"),
            log_level=raw.get("log_level"),
            traceparent=raw.get("traceparent"),
            tracestate=raw.get("tracestate"),
        )


@dataclass
class Task:
    task_id: str
    owner: str
    status: str
    request: TaskRequest
    created_at: float
    updated_at: float
    expires_at: int
    """Epoch seconds (D5): from then on the task is not found, whatever TTL has deleted yet."""
    ttl_ms: int
    status_message: str | None = None
    result: JSONObject | None = None
    error: JSONObject | None = None
    input_requests: JSONObject | None = None
    input_responses: JSONObject = field(default_factory=dict)
    round: int = 1
    attempts: int = 0

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def wire(self) -> JSONObject:
        """The ``Task`` fields every task message carries."""
        task: JSONObject = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": iso_utc(self.created_at),
            "lastUpdatedAt": iso_utc(self.updated_at),
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if self.status_message:
            task["statusMessage"] = self.status_message
        return task

    def created(self) -> JSONObject:
        """The CreateTaskResult a tools/call answers: flat, no result, error or inputRequests."""
        return {"resultType": "task", **self.wire()}

    def detailed(self) -> JSONObject:
        """tasks/get: the task, plus its result, its error or the questions it waits on."""
        detailed = self.wire()
        if self.status == COMPLETED and self.result is not None:
            detailed["result"] = self.result
        elif self.status == FAILED and self.error is not None:
            detailed["error"] = self.error
        elif self.status == INPUT_REQUIRED and self.input_requests:
            detailed["inputRequests"] = self.input_requests
        return detailed


def declares_tasks(client_capabilities: JSONObject | None) -> bool:
    """Whether the client declared the extension (2026: on the request; 2025: at initialize)."""
    extensions = (client_capabilities or {}).get("extensions")
    return isinstance(extensions, dict) and EXTENSION_ID in extensions


def missing_extension(message: str) -> JsonRpcError:
    """-32021: the request needs the extension the client did not declare."""
    return JsonRpcError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"{message}: declare the {EXTENSION_ID} extension in the client capabilities",
        {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
    )
