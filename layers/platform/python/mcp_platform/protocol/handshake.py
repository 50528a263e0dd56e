"""The 2025 revisions' ``initialize``, its protocol half: check what the client sent, negotiate
the version, and decide what its transport session keeps. The HTTP transport
(:mod:`mcp_platform.transport.legacy`) stores that as a new session and sends its Mcp-Session-Id.

Admission: what initialize stores (client name, capabilities) is checked before the write and
refused with -32602; a write the store cannot hold would otherwise fail as a 503.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_platform.protocol.jsonrpc import INVALID_PARAMS, JSONObject, JsonRpcError
from mcp_platform.protocol.storability import Inadmissible, Storability, check_within
from mcp_platform.protocol.versions import HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION

CLIENT_NAME_CHARS = 200
MAX_CAPABILITIES_BYTES = 4096  # stored on the transport session, read by every call of it
INITIAL_LOG_LEVEL = "info"  # until logging/setLevel (2025: log notifications are on by default)


@dataclass(frozen=True)
class Initialized:
    session_attributes: JSONObject
    """What the new transport session keeps (``RequestContext.attach_transport_session`` reads it)."""
    result: JSONObject
    """The InitializeResult."""


def negotiate(requested: Any) -> str:
    """Echo a supported 2025 revision, else counter-offer the newest."""
    return requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION


def transport_session_attributes(params: JSONObject, storability: Storability) -> JSONObject:
    """The attributes of the transport session an initialize with ``params`` creates; raises
    -32602 for what initialize needs but lacks, or what ``storability`` refuses."""
    requested = params.get("protocolVersion")
    capabilities = params.get("capabilities", {})
    if not isinstance(requested, str) or not isinstance(capabilities, dict):
        raise JsonRpcError(INVALID_PARAMS, "initialize needs params.protocolVersion (string) and capabilities")
    try:
        client_name = stored_client_name(params.get("clientInfo"), storability)
        check_stored_capabilities(capabilities, storability)
    except Inadmissible as exc:
        raise JsonRpcError(INVALID_PARAMS, f"initialize: {exc}") from exc
    return {
        "protocol_version": negotiate(requested),  # one of ours: safe to store
        "client_name": client_name,
        "log_level": INITIAL_LOG_LEVEL,
        # Kept so any instance can tell what this client declared (-32021 otherwise).
        "client_capabilities": capabilities,
    }


def check_stored_capabilities(capabilities: Any, storability: Storability, path: str = "capabilities") -> None:
    """Client capabilities as kept (a transport session, a task): an object, storable, bounded."""
    if not isinstance(capabilities, dict):
        raise Inadmissible(path, "must be an object")
    check_within(storability, capabilities, path, MAX_CAPABILITIES_BYTES)


def stored_client_name(client_info: Any, storability: Storability) -> str:
    """``clientInfo.name`` as the transport session stores it: a well-formed string, clipped.
    Raises :class:`Inadmissible` for what cannot be stored (the write would fail: a 503)."""
    if client_info is None:
        return ""
    if not isinstance(client_info, dict):
        raise Inadmissible("params.clientInfo", "must be an object")
    name = client_info.get("name", "")
    if not isinstance(name, str):
        raise Inadmissible("params.clientInfo.name", "must be a string")
    storability.measure(name, "params.clientInfo.name")
    return name[:CLIENT_NAME_CHARS]
