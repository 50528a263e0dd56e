"""Endpoint function: the ASGI app that uvicorn serves behind the Lambda Web Adapter (run.sh).

Everything is built once at import (module scope) and reused by every warm request.
"""

from __future__ import annotations

import logging
import os

from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

import mcp_tools
from mcp_platform.config import EnvVars, Settings
from mcp_platform.http.app import build_app

settings = Settings.from_env()

# Structured JSON logs (CloudWatch Logs Insights can query them); the same format as the
# Powertools Logger of the other functions, applied to every logger of the process.
_handler = logging.StreamHandler()
_handler.setFormatter(LambdaPowertoolsFormatter(service=settings.service_name))
logging.basicConfig(level=os.environ.get(EnvVars.LOG_LEVEL, "INFO").upper(), handlers=[_handler], force=True)

app = build_app(
    settings,
    mcp_tools,
    bind_host=os.environ.get("MCP_BIND_HOST", "127.0.0.1"),
    port=int(os.environ.get("MCP_PORT", os.environ.get("AWS_LWA_PORT", "8080"))),
)
