"""tools/call preparation without I/O: the tool, its arguments, the session, the call id.

Idempotency: the tool call id is the caller's explicit ``_meta`` idempotency key, else the
JSON-RPC request id scoped by the transport session (2025); a 2026 request without a key gets
a fresh id (see :func:`_tool_call_id`).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_platform.protocol import compact_json
from mcp_platform.protocol.jsonrpc import (
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    JSONObject,
    JsonRpcError,
    Request,
)
from mcp_platform.protocol.storability import Inadmissible, Storability, check_progress_token
from mcp_platform.protocol.tools import ToolCatalog, ToolSpec
from mcp_platform.protocol.versions import IDEMPOTENCY_KEY_META, SESSION_HANDLE_ARGUMENT

if TYPE_CHECKING:
    from mcp_platform.protocol.request_context import RequestContext

MAX_IDEMPOTENCY_KEY = 128


@dataclass(frozen=True, slots=True)
class PreparedCall:
    spec: ToolSpec
    arguments: JSONObject
    session_id: str | None
    tool_call_id: str
    progress_token: str | int | None
    request_bytes: int
    """The arguments' size as stored (the call-record budget's measure): the event's request bytes."""
    invalid_arguments: str | None = None
    request_hash: str = ""
    """Digest of the tool and its arguments; empty for a call nothing can deduplicate."""
    replayable: bool = True
    """Whether a retry can carry ``tool_call_id`` (an idempotency key, a 2025 request id, a task's
    id): its commit then leaves the marker a retry is answered from. False for a fresh id, which
    no retry can carry: nothing can be replayed, so there is no marker to write or read."""


def prepare_call(
    request: Request, call: RequestContext, catalog: ToolCatalog, *, storability: Storability, arguments_budget: int
) -> PreparedCall:
    """Everything about a tools/call that needs no I/O: tool, arguments, session, call id.
    What is kept of it is admitted by ``storability``, its arguments within ``arguments_budget``
    bytes as stored (the call record's budget, arguments and result together)."""
    name = request.params.get("name")
    if not isinstance(name, str):
        raise JsonRpcError(INVALID_PARAMS, "params.name must be a string")
    spec = catalog.get(name)
    if spec is None:
        raise JsonRpcError(INVALID_PARAMS, f"Unknown tool: {name}")
    arguments = request.params.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise JsonRpcError(INVALID_PARAMS, "params.arguments must be an object")
    invalid: str | None = None
    try:
        spec.validate_arguments(arguments)
        request_bytes = admit_arguments(arguments, storability, arguments_budget)  # before anything is stored
    except ValueError as exc:
        invalid = str(exc)  # a tool execution error the model can correct (2025-11-25)
        request_bytes = len(_canonical(arguments))
    session_id = _session_id(spec, arguments, call)
    # The digest tells a replayed call from a different one under the same id: only a call that
    # can be deduplicated needs it (a session's marker, or a 2025 request-id-based id).
    deduplicable = session_id is not None or call.transport_session_id is not None
    digest = hashlib.sha256(f"{spec.name}\x00{_canonical(arguments)}".encode()).hexdigest()[:32] if deduplicable else ""
    idempotent_id = _idempotent_id(request, call, spec, session_id, digest, storability)
    token = request.meta.get("progressToken")
    if token is not None:  # echoed in notifications, kept by a task: admitted like the arguments
        try:
            check_progress_token(storability, token)
        except Inadmissible as exc:
            raise JsonRpcError(INVALID_PARAMS, str(exc)) from exc
    return PreparedCall(
        spec=spec,
        arguments=_without_handle(arguments),
        session_id=session_id,
        tool_call_id=idempotent_id if idempotent_id is not None else os.urandom(16).hex(),
        progress_token=token if isinstance(token, (str, int)) and not isinstance(token, bool) else None,
        request_bytes=request_bytes,
        invalid_arguments=invalid,
        request_hash=digest,
        replayable=idempotent_id is not None,
    )


def _without_handle(arguments: JSONObject) -> JSONObject:
    """The tool's own arguments: the session handle is the platform's (copied only when present)."""
    if SESSION_HANDLE_ARGUMENT not in arguments:
        return arguments
    return {k: v for k, v in arguments.items() if k != SESSION_HANDLE_ARGUMENT}


def _canonical(arguments: JSONObject) -> str:
    return compact_json.canonical(arguments, default=str)


def admit_arguments(arguments: JSONObject, storability: Storability, budget: int) -> int:
    """Admission of a call's arguments: each one storable, and all of them within the call-record
    budget (arguments and result together), naming the largest when they are not. Returns their
    stored size."""
    total, sizes = storability.measure_entries(arguments, "arguments")
    if total > budget:
        largest = max(sizes, key=sizes.__getitem__)
        raise Inadmissible(
            f"arguments.{largest}",
            f"{sizes[largest]} bytes as stored; a call's arguments and result may take at most {budget} bytes "
            "together (call_record_bytes)",
        )
    return total


def require_client_capabilities(spec: ToolSpec, call: RequestContext) -> None:
    """A server must not rely on a capability the client did not declare (-32021, HTTP 400).
    Checked once the transport session (2025: where initialize's capabilities are kept) is known."""
    if not spec.client_capabilities or call.client_capabilities is None:
        return
    missing = {k: v for k, v in spec.client_capabilities.items() if k not in call.client_capabilities}
    if missing:
        raise JsonRpcError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"Tool {spec.name} needs client capabilities the request did not declare: {', '.join(missing)}",
            {"requiredCapabilities": missing},
        )


def _session_id(spec: ToolSpec, arguments: JSONObject, call: RequestContext) -> str | None:
    if spec.session != "required":
        return None
    handle = arguments.get(SESSION_HANDLE_ARGUMENT)
    if isinstance(handle, str) and handle:
        return handle
    if call.transport_session_id is not None:
        return call.transport_session_id
    raise JsonRpcError(
        INVALID_PARAMS,
        f"Tool needs an application session: pass the '{SESSION_HANDLE_ARGUMENT}' handle from open_session",
    )


def _idempotent_id(
    request: Request,
    call: RequestContext,
    spec: ToolSpec,
    session_id: str | None,
    digest: str,
    storability: Storability,
) -> str | None:
    """The id a retry of the call carries too, which it is committed (and deduplicated) under;
    always scoped by principal, so one caller can never replay another's result. None when
    there is none: the call gets a fresh id.

    * explicit ``_meta`` idempotency key: the key within its session (the caller's promise
      of one call; reusing it for another request is refused in :meth:`load`);
    * 2025 era: the JSON-RPC request id within the transport session, plus the request
      digest, so a client that restarts its id counter is never served another result;
    * 2026 era without a key: none (a fresh id, no deduplication). Request ids restart with every
      client connection and a broken request must be re-issued with a new id, so an
      id-based key would only ever replay the wrong call.
    """
    explicit = request.meta.get(IDEMPOTENCY_KEY_META)
    if explicit is not None:
        if not isinstance(explicit, str) or not 0 < len(explicit) <= MAX_IDEMPOTENCY_KEY:
            raise JsonRpcError(INVALID_PARAMS, f"_meta[{IDEMPOTENCY_KEY_META!r}] must be a 1-128 char string")
        try:
            storability.measure(explicit, f"_meta[{IDEMPOTENCY_KEY_META!r}]")
        except Inadmissible as exc:
            raise JsonRpcError(INVALID_PARAMS, str(exc)) from exc
        if spec.session != "required":
            # Deduplication lives in the session's transaction; a tool without a session
            # has nowhere to record the key, and ignoring it silently would mislead.
            raise JsonRpcError(INVALID_PARAMS, f"Tool {spec.name} has no session: idempotency keys do not apply")
        material = f"key\x00{session_id}\x00{explicit}"
    elif call.transport_session_id is not None:
        material = f"ts\x00{call.transport_session_id}\x00{json.dumps(request.id)}\x00{digest}"
    else:
        return None
    return hashlib.sha256(f"{call.principal}\x00{material}".encode()).hexdigest()[:32]
