"""Task worker function: runs the tasks the endpoint queued (tasks extension), one SQS message
per invocation, with the endpoint's own tool modules (this function ships the same code asset).

Everything is built once at import (module scope) and reused by every warm invocation. Its
lines are Powertools ``Logger``'s (the Lambda context on each), its messages, failures and cold
start Powertools ``Metrics``.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse

import mcp_tools
from mcp_platform.adapters.powertools import platform_logger, platform_metrics
from mcp_platform.bootstrap.worker import build_handler
from mcp_platform.config import Settings

settings = Settings.from_env()
logger = platform_logger(settings.service_name, settings.log_level)
metrics = platform_metrics(settings.metrics_namespace, settings.service_name)
handler = build_handler(settings, mcp_tools, batch_metrics=metrics)


@metrics.log_metrics(capture_cold_start_metric=True)
@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    return handler(event, context)
