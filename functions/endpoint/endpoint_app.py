"""Endpoint function: the ASGI app that uvicorn serves behind the Lambda Web Adapter (run.sh).

Everything is built once at import (module scope) and reused by every warm request.
"""

from __future__ import annotations

import os

import mcp_tools
from mcp_platform.application.metrics import configure_logging
from mcp_platform.bootstrap.endpoint import build_app
from mcp_platform.config import Settings

settings = Settings.from_env()
configure_logging(settings.service_name, settings.log_level)
app = build_app(
    settings,
    mcp_tools,
    bind_host=os.environ.get("MCP_BIND_HOST", "127.0.0.1"),
    port=int(os.environ.get("MCP_PORT", os.environ.get("AWS_LWA_PORT", "8080"))),
)
