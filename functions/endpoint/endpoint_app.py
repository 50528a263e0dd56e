"""Endpoint function: the ASGI app that uvicorn serves behind the Lambda Web Adapter (run.sh).

Everything is built once at import (module scope) and reused by every warm request.
"""

from __future__ import annotations

import os

import mcp_tools
from mcp_platform.config import Settings
from mcp_platform.http.app import build_app

app = build_app(
    Settings.from_env(),
    mcp_tools,
    bind_host=os.environ.get("MCP_BIND_HOST", "127.0.0.1"),
    port=int(os.environ.get("MCP_PORT", os.environ.get("AWS_LWA_PORT", "8080"))),
)
