"""2026-07-28 request checks: the per-request ``_meta`` envelope and its mirror headers."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from mcp_platform.protocol.context import LOG_LEVELS
from mcp_platform.protocol.jsonrpc import HEADER_MISMATCH, INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION, Request
from mcp_platform.protocol.versions import (
    CLIENT_CAPABILITIES_META_KEY,
    LOG_LEVEL_META_KEY,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_META_KEY,
)
from mcp_platform.transport.messages import HttpError, HttpRequest

_BASE64_VALUE = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")
NAME_BEARING = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # Tasks extension: the task id routes, like a tool name (SEP-2663, HTTP routing).
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def decode_header_value(value: str | None) -> str | None:
    """Header values that are not plain ASCII travel as ``=?base64?<utf-8 base64>?=``."""
    if value is None:
        return None
    match = _BASE64_VALUE.match(value)
    if match is None:
        return value
    try:
        return base64.b64decode(match["payload"], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None  # undecodable: cannot match the body, so the mismatch check refuses it


def _unsupported(requested: Any) -> HttpError:
    return HttpError(
        400,
        "Unsupported protocol version",
        UNSUPPORTED_PROTOCOL_VERSION,
        data={"supported": list(MODERN_VERSIONS), "requested": requested},
    )


def check_notification_version(request: HttpRequest) -> None:
    requested = request.headers.get("mcp-protocol-version", "")
    if requested not in MODERN_VERSIONS:
        raise _unsupported(requested)


def check_envelope(request: HttpRequest, message: Request) -> str:
    """Return the protocol version of a valid 2026 request, else raise a 400 HttpError.
    (A repeated routing header was refused before: ``security.check_single_valued``.)"""
    meta = message.params.get("_meta")
    if not isinstance(meta, dict):
        raise HttpError(400, "params._meta must carry the protocol version and client capabilities", INVALID_PARAMS)
    if PROTOCOL_VERSION_META_KEY not in meta or CLIENT_CAPABILITIES_META_KEY not in meta:
        missing = [key for key in (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY) if key not in meta]
        raise HttpError(400, f"params._meta is missing: {', '.join(missing)}", INVALID_PARAMS)
    version = meta[PROTOCOL_VERSION_META_KEY]
    if request.headers.get("mcp-protocol-version") != version:
        raise HttpError(400, "MCP-Protocol-Version header does not match _meta", HEADER_MISMATCH)
    if _field(request, "mcp-method") != message.method:
        raise HttpError(400, "Mcp-Method header does not match the request method", HEADER_MISMATCH)
    name_key = NAME_BEARING.get(message.method)
    if name_key is not None:
        value = message.params.get(name_key)
        if value is not None and decode_header_value(_field(request, "mcp-name")) != value:
            raise HttpError(400, "Mcp-Name header does not match the request", HEADER_MISMATCH)
    if not isinstance(version, str):
        raise HttpError(400, "protocol version must be a string", INVALID_PARAMS)
    if version not in MODERN_VERSIONS:
        raise _unsupported(version)
    return version


def _field(request: HttpRequest, name: str) -> str | None:
    """A field value without its optional surrounding whitespace (RFC 9110 section 5.5)."""
    value = request.headers.get(name)
    return value.strip(" \t") if value is not None else None


def check_param_headers(request: HttpRequest, message: Request, mirrored: tuple[tuple[str, str], ...]) -> None:
    """SEP-2243: a tool argument marked ``x-mcp-header: Name`` travels mirrored in an
    ``Mcp-Param-Name`` header (so intermediaries can route on it); the header must be present
    whenever the argument is, and equal it (plain, or ``=?base64?...?=`` for non-ASCII).
    ``mirrored`` is the tool's (argument, header) pairs (``ToolSpec.mirrored_headers``)."""
    if not mirrored:
        return
    arguments = message.params.get("arguments") or {}
    if not isinstance(arguments, dict):
        return  # the tools/call handler answers a malformed arguments object
    for argument, header in mirrored:
        if argument not in arguments:
            continue
        sent = decode_header_value(_field(request, f"mcp-param-{header.lower()}"))
        value = arguments[argument]
        expected = value if isinstance(value, str) else json.dumps(value)
        if sent != expected:
            raise HttpError(400, f"Mcp-Param-{header} header does not match argument {argument!r}", HEADER_MISMATCH)


def requested_log_level(message: Request) -> str | None:
    """2026 logging is opt-in per request: no ``logLevel`` in ``_meta``, no log notifications."""
    level = message.meta.get(LOG_LEVEL_META_KEY)
    if level is None:
        return None
    if level not in LOG_LEVELS:
        raise HttpError(400, f"_meta logLevel must be one of {', '.join(LOG_LEVELS)}", INVALID_PARAMS)
    return str(level)
