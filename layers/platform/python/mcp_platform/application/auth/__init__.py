"""Authentication of MCP requests: one module per mode behind the Authenticator protocol."""

from mcp_platform.application.auth.base import Authenticator, AuthError, Principal

__all__ = ["AuthError", "Authenticator", "Principal"]
