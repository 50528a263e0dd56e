"""Observability without start-up cost: EMF metric lines and JSON log lines on stdout/stderr.

Both are plain log lines (CloudWatch turns EMF lines into metrics; Logs Insights queries the
JSON fields), so no client is built and no call is made on the request path.
"""

from __future__ import annotations

import json
import logging
import math
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
        self._parts: dict[tuple[str, str], tuple[str, str]] = {}

    def emit(self, name: str, value: float, unit: str = "Milliseconds") -> None:
        """One EMF line, the JSON of the record :meth:`_record` describes, built from cached parts
        (one line per request: TimeToFirstByte). A finite number is written to three decimals
        (a microsecond, in milliseconds): a float's shortest repr cost twice as much."""
        parts = self._parts.get((name, unit))
        if parts is None:
            parts = self._parts[(name, unit)] = self._template(name, unit)
        if (type(value) is float or type(value) is int) and math.isfinite(value):
            text = "%.3f" % value  # noqa: UP031 (cheaper than format() and f-strings here)
        else:
            text = json.dumps(value)
        self.stream.write(f"{parts[0]}{int(time.time() * 1000)}{parts[1]}{text}}}\n")
        # Lambda's stdout is a pipe, which Python buffers by blocks: flushed here, the line leaves
        # within its invocation, not whenever 8 KB have gathered (or never, if the process dies).
        self.stream.flush()

    def _template(self, name: str, unit: str) -> tuple[str, str]:
        marker = -987654321
        line = json.dumps(self._record(name, 0.0, unit, marker), separators=(",", ":"))
        head, tail = line.split(str(marker), 1)
        return head, tail[: -len("0.0}")]

    def _record(self, name: str, value: float, unit: str, timestamp: int) -> dict[str, object]:
        return {
            "_aws": {
                "Timestamp": timestamp,
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
