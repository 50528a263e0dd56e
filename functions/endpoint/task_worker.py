"""Task worker function: runs the tasks the endpoint queued (tasks extension), one SQS message
per invocation, with the endpoint's own tool modules (this function ships the same code asset).

Everything is built once at import (module scope) and reused by every warm invocation.
"""

from __future__ import annotations

import mcp_tools
from mcp_platform.application.metrics import configure_logging
from mcp_platform.bootstrap.worker import build_handler
from mcp_platform.config import Settings

settings = Settings.from_env()
configure_logging(settings.service_name, settings.log_level)
lambda_handler = build_handler(settings, mcp_tools)
