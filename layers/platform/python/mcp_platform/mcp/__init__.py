"""Lean MCP protocol core: JSON-RPC dispatch for the 2025 revisions and 2026-07-28.

Transport (``mcp_platform.http``) is separate from protocol (``server``) which is separate
from features (``tools``). The official SDK is not imported at run time (cold start).
"""
