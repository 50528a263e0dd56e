"""JSON-RPC 2.0 messages and the error model of the protocol core."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
HEADER_MISMATCH: Final = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
RESOURCE_NOT_FOUND: Final = -32002  # 2025 revisions only
# Application errors, outside the JSON-RPC reserved band -32768..-32000 (2026-07-28 retires
# -32002 and asks new codes to stay out of the legacy band): documented in the README.
SESSION_NOT_FOUND: Final = -31001
CONFLICT: Final = -31002  # lost a race on the session: retry the call
PRECONDITION_FAILED: Final = -31003
UNAVAILABLE: Final = -31004  # the store throttled or kept conflicting: retry after a pause
LIMIT_EXCEEDED: Final = -31005  # session capacity or transaction size: not retryable
STORE_REJECTED: Final = -31006  # the store refused the call's writes for another reason
TOOL_FAILED: Final = -31007  # the tool failed unexpectedly; nothing was committed: retry
RATE_LIMITED: Final = -31008  # a rate limit's window is full: retry after data.retryAfterSeconds
QUOTA_EXCEEDED: Final = -31009  # a day or month quota is used up until data.resetsAt
FORBIDDEN: Final = -31010  # the deployment's policies forbid this caller the tool, resource or prompt

RequestId = str | int

JSONValue: TypeAlias = "bool | int | float | str | Sequence[JSONValue] | Mapping[str, JSONValue] | None"
"""A value as JSON carries it: what the wire holds once decoded. Arrays and objects inside it are
read-only views (covariant: a ``list[dict[str, str]]`` is one), so a message is built from
values of narrower types without copies."""
JSONObject: TypeAlias = "dict[str, JSONValue]"
"""A JSON object: a message, its params or result, a tool's arguments."""


class JsonRpcError(Exception):
    """An error answered to the caller as a JSON-RPC error object (never a 500)."""

    def __init__(self, code: int, message: str, data: JSONValue = None, http_status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status

    def to_error(self) -> JSONObject:
        error: JSONObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def result_message(request_id: RequestId, result: JSONObject) -> JSONObject:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_message(request_id: RequestId | None, error: JsonRpcError) -> JSONObject:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_error()}


def notification_message(method: str, params: JSONObject | None = None) -> JSONObject:
    message: JSONObject = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


@dataclass(frozen=True, slots=True)
class Request:
    """A validated JSON-RPC request or notification (``id`` is None for notifications)."""

    method: str
    params: JSONObject
    id: RequestId | None

    @property
    def meta(self) -> JSONObject:
        """``params._meta`` (an empty map when absent or not an object)."""
        meta = self.params.get("_meta")
        return meta if isinstance(meta, dict) else {}

    @property
    def is_notification(self) -> bool:
        return self.id is None


def is_response(decoded: Any) -> bool:
    """A client's answer to a server-to-client request (2025: elicitation, sampling, roots):
    an id, a result or an error, and no method. The transport routes it (``interactive.outbound``)."""
    if not isinstance(decoded, dict) or "method" in decoded or "id" not in decoded:
        return False
    return "result" in decoded or "error" in decoded


def parse_message(decoded: Any) -> Request:
    """Validate one decoded JSON-RPC request or notification from a client (responses are told
    apart before, by :func:`is_response`)."""
    if not isinstance(decoded, dict):
        if isinstance(decoded, list):
            raise JsonRpcError(INVALID_REQUEST, "Batch requests are not supported")
        raise JsonRpcError(INVALID_REQUEST, "A JSON-RPC message must be an object")
    if decoded.get("jsonrpc") != "2.0":
        raise JsonRpcError(INVALID_REQUEST, 'The "jsonrpc" member must be "2.0"')
    method = decoded.get("method")
    if not isinstance(method, str) or not method:
        raise JsonRpcError(INVALID_REQUEST, 'The "method" member must be a non-empty string')
    request_id: Any = None
    if "id" in decoded:
        request_id = decoded["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            raise JsonRpcError(INVALID_REQUEST, 'The "id" member must be a string or an integer')
    params = decoded.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise JsonRpcError(INVALID_PARAMS, 'The "params" member must be an object')
    return Request(method, params, request_id)
