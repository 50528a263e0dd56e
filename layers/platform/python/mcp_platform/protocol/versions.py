"""Protocol revisions served, and how a request picks its era."""

from __future__ import annotations

from typing import Final

MODERN_VERSIONS: Final = ("2026-07-28",)
"""Stateless revisions: per-request ``_meta`` envelope, no initialize, no Mcp-Session-Id."""

HANDSHAKE_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26")
"""Revisions negotiated by ``initialize`` (newest first: the counter-offer is the first)."""

DEFAULT_HANDSHAKE_VERSION: Final = "2025-03-26"
"""Assumed when a 2025-era request carries no MCP-Protocol-Version header (spec: backwards compat)."""

LATEST_HANDSHAKE_VERSION: Final = HANDSHAKE_VERSIONS[0]

PROTOCOL_VERSION_META_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_META_KEY: Final = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_META_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL_META_KEY: Final = "io.modelcontextprotocol/logLevel"

IDEMPOTENCY_KEY_META: Final = "dev.mcp-platform/idempotencyKey"
"""Our own ``_meta`` key: an explicit idempotency key for tools/call (see README)."""

SESSION_HANDLE_ARGUMENT: Final = "session"
"""Tool argument carrying an application-session handle (SEP-2567 style)."""


def is_modern(version: str | None) -> bool:
    """2026 era when the header names anything but a known handshake revision.

    A missing header is the 2025 era (its backwards-compatibility default); an unknown value
    goes to the modern path, whose envelope check answers with UnsupportedProtocolVersion.
    """
    return version is not None and version not in HANDSHAKE_VERSIONS
