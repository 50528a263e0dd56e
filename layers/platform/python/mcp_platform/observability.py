"""Observability without start-up cost: EMF metric lines and JSON log lines on stdout/stderr.

Both are plain log lines (CloudWatch turns EMF lines into metrics; Logs Insights queries the
JSON fields), so no client is built and no call is made on the request path.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TextIO


class JsonLogFormatter(logging.Formatter):
    """One JSON object per record: level, logger, message, service, time, exception."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "service": self.service,
            "timestamp": int(record.created * 1000),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(service: str, level: str = "INFO") -> None:
    """Send every logger of the process through one JSON handler (replaces earlier config)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLogFormatter(service))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


class MetricsWriter:
    def __init__(self, namespace: str, service: str, stream: TextIO | None = None) -> None:
        self.namespace = namespace
        self.service = service
        self.stream = stream or sys.stdout

    def emit(self, name: str, value: float, unit: str = "Milliseconds") -> None:
        record = {
            "_aws": {
                "Timestamp": int(time.time() * 1000),
                "CloudWatchMetrics": [
                    {
                        "Namespace": self.namespace,
                        "Dimensions": [["service"]],
                        "Metrics": [{"Name": name, "Unit": unit}],
                    }
                ],
            },
            "service": self.service,
            name: value,
        }
        self.stream.write(json.dumps(record, separators=(",", ":")) + "\n")
