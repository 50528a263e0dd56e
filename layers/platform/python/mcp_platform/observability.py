"""CloudWatch metrics as Embedded Metric Format log lines (no client, no extra call)."""

from __future__ import annotations

import json
import sys
import time
from typing import TextIO


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
